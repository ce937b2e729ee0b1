"""A file beside the ledger that the engine writes only after the ledger itself (the
journal's index, the per-target record) and cannot be written: the command must not say
"refused ... (nothing was changed)" and exit 1 while the change is in fact on disk.
A person told the approval was refused believes no approval exists; the next session
runs the irreversible step with it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, RUNBOOK_LEDGER, cli_env, handoff


def _primed(fleet, full=True):
    """The sidecars of a shift of ordinary work (`full`), or of one approval."""
    if not full:
        assert handoff("approve", fleet, "db-1", "--yes", "--as", "bob").returncode == 0
        return
    for args in (("pause", fleet, "--reason", "y"), ("unpause", fleet), ("approve", fleet, "db-2", "--step", "cutover", "--yes", "--as", "carol"),
                 ("block", fleet, "db-5", "--reason", "z"), ("unblock", fleet, "db-5", "--to", "queued", "--reason", "z")):
        assert handoff(*args).returncode == 0


@pytest.mark.parametrize("suffix,args", [
    (".journal.jsonl.index", ("approve", "db-1", "--yes", "--as", "bob")),
    (".journal.jsonl.index", ("pause", "--reason", "x")),
    (".last-write.targets.jsonl", ("block", "db-5", "--reason", "x")),  # after one approval: the file is new
    (".last-write.json", ("approve", "db-1", "--yes", "--as", "bob")),  # marked pending before the swap
], ids=["index-approve", "index-pause", "targets-record-block", "record-approve"])
@pytest.mark.parametrize("kind", ["symlink", "folder"])
def test_a_refused_write_leaves_the_ledger_unchanged(fleet, suffix, args, kind):
    _primed(fleet, full=suffix != ".last-write.targets.jsonl")
    side = str(fleet) + suffix
    if os.path.lexists(side):
        os.remove(side)
    if kind == "symlink":
        os.symlink(str(fleet.parent / "elsewhere"), side)
    else:
        os.mkdir(side)
    before = fleet.read_bytes()
    result = handoff(args[0], fleet, *args[1:])
    err = result.stderr
    assert "Traceback" not in err, err
    if result.returncode != 0 or "nothing was changed" in err:
        # It said it refused: then nothing may have changed.
        assert fleet.read_bytes() == before, (result.returncode, err, fleet.read_text())


def test_an_approval_said_refused_is_not_used_by_the_next_session(fleet):
    """The operator's view: `approve` exits 1 '(nothing was changed)'; a session must then not run cutover on db-1."""
    _primed(fleet)
    side = str(fleet) + ".journal.jsonl.index"
    os.remove(side)
    os.symlink(str(fleet.parent / "elsewhere"), side)
    approve = handoff("approve", fleet, "db-1", "--yes", "--as", "bob")
    assert approve.returncode == 1 and "nothing was changed" in approve.stderr, approve.stdout + approve.stderr
    os.remove(side)  # someone tidies the folder
    session = handoff("resume", "--ledger", fleet, "--max-steps", "3")
    assert "db-1: starting cutover" not in session.stdout, session.stdout


def test_every_file_a_change_writes_beside_the_ledger_is_looked_at_first():
    """The list asked before a change names each sidecar module's own suffix (spelled there to keep the
    hook's imports light): a new file written after the ledger would otherwise fail a change half done."""
    from engine.audit import index, journal_io
    from engine.ledger.access import LOCK_SUFFIX, WRITTEN_BESIDE
    from engine.store import history, kept_fields, record

    owned = {LOCK_SUFFIX, journal_io.SUFFIX, journal_io.SUFFIX + index.SUFFIX, history.SUFFIX,
             record.NAMES, kept_fields.WHOLE, kept_fields.LINES}  # not the record itself: it is marked before the swap
    assert set(WRITTEN_BESIDE) == owned


def test_an_index_that_fails_after_the_record_is_written_fails_nothing(tmp_path):
    """The journal's index is made from the journal: if it cannot be saved once the record is in (a folder
    put there after the command looked), the record stands and the append says so, not "nothing was changed"."""
    from engine.audit.journal import Journal

    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\ntargets: {}\n")
    journal = Journal(str(ledger) + ".journal.jsonl", ledger=str(ledger))
    journal.append("approval", "first", actor="bob", target="db-1", rev=1)
    index = str(ledger) + ".journal.jsonl.index"
    if os.path.lexists(index):
        os.remove(index)
    os.mkdir(index)
    record = journal.append("approval", "second", actor="bob", target="db-2", rev=2)
    assert record["msg"] == "second"
    assert "second" in (tmp_path / "ledger.yaml.journal.jsonl").read_text()


@pytest.mark.parametrize("suffix", [".journal.jsonl.index", ".last-write.targets.jsonl", ".history.jsonl"])
def test_a_file_the_change_would_write_after_the_ledger_is_named_before_anything_changes(fleet, suffix):
    """A folder where such a file belongs refuses the change up front, naming it and what to do."""
    _primed(fleet, full=False)
    side = str(fleet) + suffix
    if os.path.lexists(side):
        os.remove(side)
    os.mkdir(side)
    before = fleet.read_bytes()
    result = handoff("pause", fleet, "--reason", "x")
    assert result.returncode == 1 and side in result.stderr and "move it away" in result.stderr, result.stderr
    assert fleet.read_bytes() == before
