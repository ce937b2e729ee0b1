"""The record stays true (review round "record"): a journal cut short at a line boundary with its
index and last-write record removed, a revision the history journal could not record, and
`handoff show --at` on a ledger without a runbook.

Goes in tests/unit/. Real `handoff` processes on real files, as tests/unit/test_journal_erased.py
and tests/unit/test_disk_full.py do (the disk-full test mounts a small tmpfs: root only).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import yaml

from engine.audit.journal import journal_path
from tests.conftest import cli_env, handoff
from tests.unit.test_disk_full import PAGE, disk  # noqa: F401  (disk: a 1 MiB tmpfs, root only)


def _cut_journal_after(journal: Path, revision: int) -> list[dict]:
    """Drop every record of a revision above `revision` (whole lines: the journal ends on a line
    boundary, and what is left links up); returns the records dropped."""
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    keep, dropped = [], []
    for line in lines:
        record = json.loads(line)
        (dropped if isinstance(record.get("rev"), int) and record["rev"] > revision else keep).append(line)
    journal.write_text("".join(keep), encoding="utf-8")
    return [json.loads(line) for line in dropped]


def test_a_journal_cut_short_with_its_index_and_last_write_record_removed_leaves_a_trace(article: Path) -> None:
    """Bob pauses the ledger for an incident and unpauses it; someone then removes those two records
    from the journal's end (whole lines) and `rm ledger.yaml.journal.jsonl.index ledger.yaml.last-write.json`
    (files the README calls the engine's own, for .gitignore). The ledger says revision 5 and the history
    journal beside it holds 5 writes, but `check` says ok and `journal --verify` says "chain ok": the
    journal erased whole is caught (test_journal_erased), the same cut short is not."""
    for text in ("one", "two", "three"):
        assert handoff("note", article, "--set", text, "--as", "bob").returncode == 0
    assert handoff("pause", article, "--reason", "incident INC-1", "--as", "bob").returncode == 0
    assert handoff("unpause", article, "--as", "bob").returncode == 0
    assert yaml.safe_load(article.read_text())["revision"] == 5
    journal = Path(journal_path(str(article)))
    assert handoff("check", article).returncode == 0
    assert handoff("journal", article, "--verify").returncode == 0

    dropped = _cut_journal_after(journal, 3)
    assert {r["kind"] for r in dropped} == {"pause", "unpause"}  # who paused, why, who unpaused: gone
    for name in (journal.name + ".index", article.name + ".last-write.json"):
        (article.parent / name).unlink(missing_ok=True)  # the index exists once a step or an approval is journaled
    assert not (article.parent / (article.name + ".last-write.json")).exists()
    assert len(Path(str(article) + ".history.jsonl").read_text().splitlines()) == 5  # the twin still counts 5 writes

    check = handoff("check", article)
    verify = handoff("journal", article, "--verify")
    said = check.stdout + check.stderr
    assert check.returncode != 0 and "journal" in said, f"check sees nothing:\n{said}"
    assert verify.returncode != 0, f"verify calls the cut journal fine:\n{verify.stdout}{verify.stderr}"


def test_a_revision_the_history_journal_could_not_record_is_not_reported_as_recorded(article: Path) -> None:
    """A writer stuck holding the history journal's lock (a stopped `handoff` process; here `flock`):
    `handoff pause` waits HANDOFF_LOCK_TIMEOUT, writes the ledger and the journal, but not the history's
    record of the revision, and says "ledger paused", exit 0. The README: commands that change the
    ledger exit 1 when "not fully recorded"; a stuck holder of the journal's own lock is refused before
    anything changes. `handoff show --at 2` then cannot rebuild the revision the command said it recorded."""
    assert handoff("note", article, "--set", "first", "--as", "bob").returncode == 0
    history = Path(str(article) + ".history.jsonl")
    holder = subprocess.Popen(["flock", str(history), "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # until flock holds it
            probe = subprocess.run(["flock", "-n", str(history), "true"])
            if probe.returncode != 0:
                break
            time.sleep(0.05)
        result = handoff("pause", article, "--reason", "maint", "--as", "bob", env=cli_env(HANDOFF_LOCK_TIMEOUT="1"))
    finally:
        holder.kill()
        holder.wait()
    revision = yaml.safe_load(article.read_text())["revision"]
    assert os.path.exists(str(history) + ".gap")  # the engine itself knows the record is missing
    assert result.returncode == 1, f"exit {result.returncode}, said:\n{result.stdout}{result.stderr}"
    assert "history" in result.stderr and f"revision {revision}" in result.stderr, result.stderr


def test_a_full_disk_that_loses_the_history_record_is_not_reported_as_recorded(disk: Path) -> None:  # noqa: F811
    """A 1,500-target ledger edited by hand (a comment added): the next engine write journals the whole
    ledger in the history journal (~130 KB), far more than the new ledger file or the journal's `pause`
    record need. With room for those but not for that, `handoff pause` says "ledger paused", exit 0;
    the history holds no record of the revision (a `.gap` file says so), and `check` and `journal
    --verify` both say ok."""
    ledger = disk / "l.yaml"
    rows = [f"  h{i:04d}: {{state: queued, a: x, b: x, c: x, d: x, e: x, f: x, g: x, h: x}}" for i in range(1500)]
    ledger.write_text("task: big\nowner_shift: x\ntargets:\n" + "\n".join(rows) + "\n")
    assert handoff("note", ledger, "--set", "start", "--as", "bob").returncode == 0
    with open(ledger, "a") as fh:
        fh.write("# a comment\n")  # a hand edit: the engine's next history record is the whole ledger
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    leave = -(-ledger.stat().st_size // PAGE) * PAGE + PAGE  # the new ledger fits; the whole-ledger record not
    with open(disk / "filler", "ab") as fh:
        fh.write(b"\0" * (free - leave))
    result = handoff("pause", ledger, "--reason", "maint", "--as", "bob")
    (disk / "filler").unlink()
    revision = yaml.safe_load(ledger.read_text())["revision"]
    assert yaml.safe_load(ledger.read_text())["paused"]  # the ledger was written
    gap = Path(str(ledger) + ".history.jsonl.gap")
    assert gap.exists() and "No space left" in gap.read_text()  # the history record was not
    assert result.returncode == 1, f"exit {result.returncode}, said:\n{result.stdout}{result.stderr}"
    assert "history" in result.stderr and f"revision {revision}" in result.stderr, result.stderr


def test_show_at_a_revision_of_a_ledger_without_a_runbook_answers_without_a_traceback(article: Path) -> None:
    """The article's ledger has no runbook (valid and viewable, the README says). `handoff show --at 1
    --json` crashes with AttributeError ('NoneType' object has no attribute 'steps') in
    engine/cli/report_cmd.py:_retry_to, as does the text form whenever the history cannot rebuild a revision."""
    assert handoff("note", article, "--set", "first", "--as", "bob").returncode == 0
    assert handoff("show", article, "--at", "1").returncode == 0  # the control: the text form, rebuilt
    result = handoff("show", article, "--at", "1", "--json")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["revision"] == 1
