"""A withdrawal (`handoff unapprove`) is journaled before the approval leaves the file, so no
crash or held lock leaves an approval that is gone from the file with nothing saying it was
withdrawn: copied back into the YAML (its own `approval` record still in the journal), it
would authorise the irreversible step again. A withdrawal an earlier engine lost to a journal
gap (its record written after the file) still counts through the gap that names it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.audit.journal import Journal, journal_path
from tests.conftest import (
    ROOT,
    OlderEngine,
    cli_env,
    engine_write,
    handoff,
    killed_at_failpoint,
    lock_taken_at_failpoint,
)

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def _approved(tmp_path: Path) -> tuple[Path, list]:
    """db-19, its irreversible `link` approved by alice; the approval as the file holds it."""
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "withdrawn", "owner_shift": "test-oncall",
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    return ledger, yaml.safe_load(ledger.read_text())["targets"]["db-19"]["approvals"]


def _revived_never_runs(tmp_path: Path, ledger: Path, held: list) -> None:
    """Written back from the journal's approval record, run by someone whose marks never saw
    the withdrawal (another OS user's state): the step does not start."""
    assert not yaml.safe_load(ledger.read_text())["targets"]["db-19"].get("approvals")  # withdrawn in the ledger
    from engine.ledger.model import Approval

    engine_write(ledger, lambda led: led.targets["db-19"].approvals.extend(Approval.model_validate(a) for a in held))
    ran = handoff("run", ledger, "db-19", "link", "--as", "bob", env=cli_env(XDG_STATE_HOME=str(tmp_path / "fresh-state")))
    assert not (tmp_path / "spawned-db-19").exists(), "the approval alice withdrew ran:\n" + ran.stdout + ran.stderr
    assert "approval withdrawn" in ran.stdout + ran.stderr, ran.stdout + ran.stderr


@pytest.mark.parametrize("point", ["swapped ledger.yaml", "after-ledger-swap"])
def test_a_kill_after_the_withdrawn_file_is_in_never_lets_the_approval_run(tmp_path: Path, point: str) -> None:
    ledger, held = _approved(tmp_path)
    killed_at_failpoint(point, "unapprove", ledger, "db-19", "--as", "alice")  # the new file is in; nothing after it ran
    _revived_never_runs(tmp_path, ledger, held)


def test_a_withdrawal_that_cannot_be_journaled_changes_nothing(tmp_path: Path) -> None:
    """The journal's lock taken just before the withdrawal's record (the ledger not yet
    written) and held past its bound: unapprove says so, and the file is as it was."""
    ledger, _ = _approved(tmp_path)
    before = ledger.read_bytes()
    marker = tmp_path / "paused"
    command = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "unapprove", str(ledger), "db-19", "--as", "alice"],
                               env=cli_env(HANDOFF_LOCK_TIMEOUT="1", HANDOFF_FAILPOINTS="before-first-records",
                                           HANDOFF_FAILPOINT_PAUSE=str(marker)),
                               cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, stderr, _ = lock_taken_at_failpoint(command, marker, journal_path(str(ledger)))
    assert code == 1, stderr
    assert "journaled before the ledger changes, so nothing was changed: try again" in stderr, stderr
    assert ledger.read_bytes() == before


@pytest.mark.parametrize("later", [0, 70], ids=["at-once", "past-70-mib"])
def test_a_withdrawal_an_earlier_engine_lost_to_a_held_journal_lock_never_lets_the_approval_run(tmp_path: Path, later: int) -> None:
    """Stop 48's engine (a64c282) journaled a withdrawal after the file: the journal's lock
    held between the two, it noted the lost record as a gap. `later`: MiB of journal written
    after the gap; the gap is a witness like the record it stands for, looked up at every
    fence through the journal's index, never a scan."""
    ledger, held = _approved(tmp_path)
    stop_48 = OlderEngine(tmp_path, "a64c282")
    marker = tmp_path / "paused"
    command = stop_48.start("unapprove", ledger, "db-19", "--as", "alice", HANDOFF_LOCK_TIMEOUT="1",
                            HANDOFF_FAILPOINTS="before-journal-records", HANDOFF_FAILPOINT_PAUSE=str(marker))
    code, stderr, _ = lock_taken_at_failpoint(command, marker, journal_path(str(ledger)))
    assert code == 1 and "NOT in the journal" in stderr, stderr
    assert handoff("note", ledger, "--set", "the next append records the gap").returncode == 0
    records = [json.loads(line) for line in open(journal_path(str(ledger)), encoding="utf-8")]
    assert any(r["kind"] == "journal_gap" and r.get("lost_kind") == "unapproval" for r in records)
    chatty = Journal(journal_path(str(ledger)))
    for i in range(later):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-20", output="x" * (1024 * 1024))
    _revived_never_runs(tmp_path, ledger, held)


def test_the_withdrawal_names_the_revision_it_made(tmp_path: Path) -> None:
    """Its intent went first; the record itself follows the write, with its revision: `diff`
    lists it, and `show --at` that revision no longer holds the approval (review helper)."""
    ledger, _ = _approved(tmp_path)
    taken = handoff("unapprove", ledger, "db-19", "--as", "alice")
    assert taken.returncode == 0, taken.stdout + taken.stderr
    head = yaml.safe_load(ledger.read_text())["revision"]
    diff = handoff("diff", ledger, str(head - 1), str(head))
    assert diff.returncode == 0 and "unapproval" in diff.stdout, f"revision {head}:\n" + diff.stdout + diff.stderr
    shown = handoff("show", ledger, "--at", str(head))
    assert shown.returncode == 0 and "link by alice" not in shown.stdout, shown.stdout + shown.stderr
