"""The target names the engine last wrote live beside the ledger, not in its write record.

`<ledger>.last-write.json` names them by digest and count; `<ledger>.last-write.names.json`
holds the list, written only when the names change (a step writes the record twice, and
10,000 names in it cost a 10k step a fifth of its time). A ledger that lost targets is
still refused until a person accepts it: when the list is there, naming them; when it is
gone or was edited, as a rollback naming the count.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, RUNBOOK_LEDGER, OlderEngine, handoff, killed_at_failpoint


def _ledger(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    assert handoff("note", path, "--set", "engine write").returncode == 0
    return path


def _cut(path: Path, name: str) -> str:
    """The file with target `name` (a one-line target) taken out by hand; returns the text."""
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(f"  {name}:")]
    assert len(kept) == len(lines) - 1, f"{name} is not one line in {path}"
    path.write_text("".join(kept))
    return path.read_text()


def _names_file(path: Path) -> Path:
    return Path(str(path) + ".last-write.names.json")


def test_a_write_that_changes_no_name_leaves_the_list_as_it_was(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    record = json.loads(Path(str(path) + ".last-write.json").read_text())
    assert "names" not in record and record["count"] == 5
    before = os.stat(_names_file(path))
    assert handoff("note", path, "--set", "second write").returncode == 0
    assert handoff("pause", path, "--reason", "x", "--as", "alice").returncode == 0
    after = os.stat(_names_file(path))
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_removed_target_is_named_missing_and_refused_until_accepted(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    cut = _cut(path, "db-2")
    result = handoff("approve", path, "db-1", "--as", "bob")
    assert result.returncode == 1 and "missing: db-2" in result.stderr and "--accept-removal" in result.stderr, result.stderr
    assert path.read_text() == cut


def test_a_kill_after_the_new_list_and_before_the_record_still_knows_the_old_list(tmp_path: Path) -> None:
    """A person adds db-6 by hand; the engine's next write is killed between writing the new
    names list and its record (which still names the old list). db-2 then taken out by hand
    is still named missing: the list file kept the old list beside the new one."""
    path = _ledger(tmp_path)
    path.write_text(path.read_text().replace("  db-5: {state: queued}\n", "  db-5: {state: queued}\n  db-6: {state: queued}\n"))
    point = f"swapped {path.name}.last-write.names.json"
    killed_at_failpoint(point, "note", path, "--set", "after db-6")
    record = json.loads(Path(str(path) + ".last-write.json").read_text())
    assert record["count"] == 5 and "after db-6" in path.read_text()  # the ledger is in; the record is the one before
    cut = _cut(path, "db-2")  # six targets less one: as many as the record counts
    result = handoff("approve", path, "db-1", "--as", "bob")
    assert result.returncode == 1 and "missing: db-2" in result.stderr, result.stderr
    assert path.read_text() == cut


def test_a_list_gone_or_edited_with_fewer_targets_is_a_rollback_until_accepted(tmp_path: Path) -> None:
    for how in ("gone", "edited"):
        folder = tmp_path / how
        folder.mkdir()
        path = _ledger(folder)
        if how == "gone":
            _names_file(path).unlink()
        else:
            kept = json.loads(_names_file(path).read_text())
            for names in kept["lists"].values():
                names.remove("db-2")  # the list made to agree with the cut below
            _names_file(path).write_text(json.dumps(kept))
        cut = _cut(path, "db-2")
        result = handoff("approve", path, "db-1", "--as", "bob")
        assert result.returncode == 1, (how, result.stderr)
        assert "it has 4 targets, fewer than the 5 the engine last wrote" in result.stderr, (how, result.stderr)
        assert "fleet.yaml.last-write.names.json" in result.stderr and "--accept-rollback" in result.stderr
        assert path.read_text() == cut
        accepted = handoff("check", path, "--accept-rollback", "--as", "bob")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        assert handoff("approve", path, "db-1", "--as", "bob").returncode == 0


def test_an_older_engines_record_with_the_list_inside_still_names_the_missing(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    record_path = Path(str(path) + ".last-write.json")
    record = json.loads(record_path.read_text())
    names = json.loads(_names_file(path).read_text())["lists"][record.pop("names_digest")]
    record.pop("count")
    record["names"] = names  # as the engine before this change wrote it
    record_path.write_text(json.dumps(record))
    _names_file(path).unlink()
    cut = _cut(path, "db-3")
    result = handoff("approve", path, "db-1", "--as", "bob")
    assert result.returncode == 1 and "missing: db-3" in result.stderr and "engine last wrote 5" in result.stderr, result.stderr
    assert path.read_text() == cut
    assert handoff("check", path, "--accept-removal", "--as", "bob").returncode == 0
    written = json.loads(record_path.read_text())
    assert "names" not in written and written["count"] == 4
    assert json.loads(_names_file(path).read_text())["lists"][written["names_digest"]] == [n for n in names if n != "db-3"]


@pytest.mark.parametrize("how", ["gone", "torn"])
def test_a_lost_list_is_written_again_by_the_next_write(tmp_path: Path, how: str) -> None:
    """The list deleted (`git clean`) or torn while the names stay the same: the next engine
    write puts it back, so a target renamed by hand later (the count unchanged) is still
    named missing."""
    path = _ledger(tmp_path)
    if how == "gone":
        _names_file(path).unlink()
    else:
        _names_file(path).write_text('{"v": 1, "lists": {')
    assert handoff("note", path, "--set", "written again").returncode == 0
    path.write_text(path.read_text().replace("  db-2:", "  db-6:"))
    result = handoff("approve", path, "db-1", "--as", "bob")
    assert result.returncode == 1 and "missing: db-2" in result.stderr, result.stderr


def test_the_engine_before_this_record_refuses_a_hand_edit_of_a_ledger_this_one_wrote(tmp_path: Path) -> None:
    """An engine from before the list moved out (stop 47's, 1f1ddaf) reads no names in the
    new record: it must fail closed (call the hand edit a rollback), not pass a lost target."""
    stop_47 = OlderEngine(tmp_path, "1f1ddaf").run
    path = _ledger(tmp_path)
    cut = _cut(path, "db-2")
    result = stop_47("approve", path, "db-1", "--as", "bob")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "went back in time" in result.stderr and "upgrade handoff" in result.stderr, result.stderr
    assert path.read_text() == cut


def test_the_list_is_ignored_by_git_like_the_other_files_beside_a_ledger() -> None:
    for suffix in (".last-write.json", ".last-write.names.json", ".last-write.targets.json"):
        probe = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", f"ledgers/x/fleet.yaml{suffix}"])
        assert probe.returncode == 0, f"ledgers/x/fleet.yaml{suffix} is not ignored"
