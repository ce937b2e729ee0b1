"""Nothing outside the YAML changes what the YAML says, and nothing overwrites a file it cannot read.

Sidecars are never followed through symlinks; a store that read a good ledger a moment
ago never writes over a broken one from that copy; a save that lands while a change
is being made is kept, and the change is made again on top of it.
"""

from __future__ import annotations

import pytest

from engine.api import open_ledger
from engine.errors import LedgerInvalid
from engine.store.file import FileStore
from engine.store.sidecar import SidecarRefused
from tests.conftest import RUNBOOK_LEDGER, handoff


@pytest.fixture
def fleet_dir(tmp_path):
    (tmp_path / "fleet.yaml").write_text(RUNBOOK_LEDGER)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return tmp_path


@pytest.mark.parametrize("sidecar", ["fleet.yaml.lock", "fleet.yaml.last-write.json", "fleet.yaml.last-write.names.json",
                                     "fleet.yaml.journal.jsonl"])
def test_a_planted_sidecar_symlink_is_refused_and_its_victim_untouched(fleet_dir, sidecar):
    """`<ledger>.lock|.last-write.json|.journal.jsonl -> victim`: one-line error naming the symlink; victim intact."""
    (fleet_dir / sidecar).symlink_to(fleet_dir / "victim.txt")
    before = (fleet_dir / "fleet.yaml").read_bytes()
    result = handoff("pause", str(fleet_dir / "fleet.yaml"), "--reason", "x")
    assert result.returncode != 0
    assert f"{sidecar} is a symlink" in result.stderr and "Traceback" not in result.stderr
    assert (fleet_dir / "victim.txt").read_text() == "precious\n"
    if sidecar != "fleet.yaml.journal.jsonl":  # the journal is appended after the write lands (its own issue)
        assert (fleet_dir / "fleet.yaml").read_bytes() == before


def test_the_ledger_itself_is_still_written_through_its_link(tmp_path):
    """A symlinked ledger (a deliberate layout) is written to its real file; the link stays a link."""
    real = tmp_path / "real.yaml"
    real.write_text(RUNBOOK_LEDGER)
    (tmp_path / "link.yaml").symlink_to(real)
    assert handoff("pause", str(tmp_path / "link.yaml"), "--reason", "x").returncode == 0
    assert (tmp_path / "link.yaml").is_symlink() and "paused:" in real.read_text()


def test_a_store_that_read_a_good_ledger_never_writes_over_a_broken_one(fleet_dir):
    """Read good, then the file breaks: a change raises and the broken bytes stay exactly as they are."""
    path = fleet_dir / "fleet.yaml"
    store = FileStore(str(path))
    store.read()
    store.transact(lambda ledger: setattr(ledger, "owner_shift", "night"))
    broken = path.read_text().replace("targets:", "targets: [", 1).encode()
    path.write_bytes(broken)
    with pytest.raises(LedgerInvalid):
        store.transact(lambda ledger: setattr(ledger, "owner_shift", "day"))
    assert path.read_bytes() == broken


def test_a_broken_save_landing_during_a_change_is_never_overwritten(fleet_dir):
    """An editor saves invalid YAML while the change is being made: the change stops, the save stays."""
    path = fleet_dir / "fleet.yaml"
    store = FileStore(str(path))
    broken = b"task: x\ntargets: {db-1: [\n"

    def change(ledger):
        path.write_bytes(broken)  # lands after the read, before the swap
        ledger.owner_shift = "night"

    with pytest.raises(LedgerInvalid):
        store.transact(change)
    assert path.read_bytes() == broken


def test_a_valid_save_landing_during_a_change_is_kept_and_the_change_made_on_top(fleet_dir):
    """An editor's save between read and swap survives; the engine's change is re-applied on top of it."""
    path = fleet_dir / "fleet.yaml"
    handle = open_ledger(str(path), actor="alice")
    calls = []

    def change(ledger):
        calls.append(1)
        if len(calls) == 1:
            path.write_text(path.read_text().replace("handoff_note: first note", "handoff_note: saved in vim"))
        ledger.owner_shift = "night"

    handle.store.transact(change)
    text = path.read_text()
    assert len(calls) == 2 and "saved in vim" in text and "owner_shift: night" in text


def test_a_symlinked_record_is_refused_before_the_ledger_changes(fleet_dir):
    """The record of the last write is checked before the ledger is written, not after."""
    (fleet_dir / "fleet.yaml.last-write.json").symlink_to(fleet_dir / "victim.txt")
    before = (fleet_dir / "fleet.yaml").read_bytes()
    with pytest.raises(SidecarRefused):
        FileStore(str(fleet_dir / "fleet.yaml")).transact(lambda ledger: setattr(ledger, "owner_shift", "x"))
    assert (fleet_dir / "fleet.yaml").read_bytes() == before


@pytest.mark.parametrize("sidecar", ["fleet.yaml.last-write.json", "fleet.yaml.last-write.names.json"])
def test_a_sidecar_symlink_planted_after_the_store_opened_is_refused_before_the_write(fleet_dir, sidecar):
    """A long-running writer (a session, the screen) opened the ledger before the link was planted: the
    CLI's check at open does not see it, so the transaction itself refuses it before the ledger is written."""
    path = fleet_dir / "fleet.yaml"
    store = FileStore(str(path))
    store.transact(lambda ledger: setattr(ledger, "owner_shift", "night"))
    (fleet_dir / sidecar).unlink(missing_ok=True)
    (fleet_dir / sidecar).symlink_to(fleet_dir / "victim.txt")
    before = path.read_bytes()
    with pytest.raises(SidecarRefused, match="is a symlink"):
        store.transact(lambda ledger: setattr(ledger, "owner_shift", "day"))
    assert path.read_bytes() == before
    assert (fleet_dir / "victim.txt").read_text() == "precious\n"
