"""A full disk, for real: a small tmpfs this test mounts (root only; it fails, never skips,
if the mount cannot be made). A change that cannot be written changes nothing and says
so in one line; a change whose journal record cannot be written says exactly that, leaves
no fragment in the journal, and the next record written notes the gap."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.audit.journal import Journal
from tests.conftest import RUNBOOK_LEDGER, handoff

PAGE = 4096


@pytest.fixture
def disk(tmp_path):
    """A 1 MiB tmpfs mounted for this test (unmounted after)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.fail(f"cannot mount a small tmpfs ({made.stderr.strip()}): this test needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave: int) -> Path:
    """Use up the disk but `leave` bytes (a multiple of the page size)."""
    stats = os.statvfs(mount)
    free = stats.f_bavail * stats.f_frsize
    filler = mount / "filler"
    with open(filler, "ab") as fh:
        fh.write(b"\0" * (free - leave))
    stats = os.statvfs(mount)
    assert stats.f_bavail * stats.f_frsize == leave
    return filler


def _ledger(mount: Path) -> Path:
    path = mount / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    assert handoff("note", path, "--set", "start").returncode == 0  # lock and journal exist, as in use
    return path


def test_a_change_that_cannot_be_written_changes_nothing(disk):
    """No room for the new ledger: exit 1, one line saying the disk is full, ledger and journal untouched."""
    ledger = _ledger(disk)
    before, journal_before = ledger.read_bytes(), Path(str(ledger) + ".journal.jsonl").read_bytes()
    fill(disk, 2 * PAGE)
    result = handoff("note", ledger, "--set", "n" * 30_000)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "full" in result.stderr and "nothing was changed" in result.stderr
    assert "saved" not in result.stdout
    assert ledger.read_bytes() == before
    assert Path(str(ledger) + ".journal.jsonl").read_bytes() == journal_before
    assert sorted(p.name for p in disk.iterdir() if p.name.endswith(".tmp")) == []


def test_a_record_that_cannot_be_written_whole_is_a_gap_the_next_record_names(disk):
    """Room for the ledger but not its 30 KB journal record: exit 1 with the revision, no fragment, then a journal_gap."""
    ledger = _ledger(disk)
    journal_path = str(ledger) + ".journal.jsonl"
    journal_before = Path(journal_path).read_bytes()
    note = "n" * 30_000
    filler = fill(disk, 48 * 1024)  # the new ledger (~31 KB) fits; its journal record then does not
    result = handoff("note", ledger, "--set", note)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    data = yaml.safe_load(ledger.read_text())
    revision = data["revision"]
    assert f"recorded in the ledger (revision {revision}) but NOT in the journal" in result.stderr
    assert data["handoff_note"] == note  # the ledger was written first
    assert Path(journal_path).read_bytes() == journal_before  # no fragment left behind

    filler.unlink()
    assert handoff("pause", ledger, "--reason", "disk was full").returncode == 0
    journal = Journal(journal_path)
    records, _ = journal.read(0)
    assert list(journal.warnings) == []
    kinds = [r["kind"] for r in records]
    assert kinds[-2:] == ["journal_gap", "pause"]
    gap = records[-2]
    assert gap["rev"] == revision and gap["lost_kind"] == "note"
    assert f"revision {revision}" in gap["msg"] and "No space left" in gap["msg"]
    assert not os.path.exists(journal_path + ".gap")  # noted once, then forgotten
