"""A writer never waits for ever on the journal's lock: past HANDOFF_LOCK_TIMEOUT it names the
process holding it (and says when that process is stopped). Held before a command changes the
ledger, nothing is changed; taken in between, the change is kept and the revision it could not
journal is recorded as a gap by the next append."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from engine.api import open_ledger
from engine.approvals.authority import unauthorised
from engine.audit.journal import journal_path
from engine.codec.timefmt import parse_iso
from tests.conftest import ROOT, cli_env, handoff, hold_flock, lock_taken_at_failpoint, wait_stopped


@pytest.mark.parametrize("stopped", [False, True], ids=["busy", "stopped"])
def test_a_held_journal_lock_is_named_and_nothing_is_changed(fleet, stopped):
    assert handoff("note", fleet, "--set", "first note").returncode == 0
    journal = journal_path(str(fleet))
    holder = hold_flock(journal)
    try:
        if stopped:
            holder.send_signal(signal.SIGSTOP)
            wait_stopped(holder.pid, 10)
        before = {p: open(p, "rb").read() for p in (str(fleet), journal)}
        result = handoff("note", fleet, "--set", "second note", env=cli_env(HANDOFF_LOCK_TIMEOUT="1"), timeout=30)
        assert result.returncode == 1, result.stderr
        assert result.stderr.count("\n") == 1  # one line, the holder's command line folded into it
        assert f"{journal}: the journal's lock has been held for more than 1s" in result.stderr
        assert f"pid {holder.pid} (python" in result.stderr
        assert "then run the command again; nothing was changed" in result.stderr
        assert (f"which is stopped: let it go on (kill -CONT {holder.pid}) or end it" in result.stderr) is stopped
        assert {p: open(p, "rb").read() for p in before} == before
    finally:
        if stopped:
            holder.send_signal(signal.SIGCONT)
        holder.communicate(timeout=10)
    assert handoff("note", fleet, "--set", "second note").returncode == 0  # as it says: once it is free, again
    assert "second note" in fleet.read_text()


def _journal_held_after_the_change(fleet, tmp_path, *args: str) -> tuple[int, str, int]:
    """Run `handoff ARGS`, held by a failpoint after its ledger write; take the journal's lock
    then, and let the command go on. (its exit code, its stderr, the holder's pid); the lock
    is let go before this returns."""
    marker = tmp_path / "paused"
    env = cli_env(HANDOFF_LOCK_TIMEOUT="1", HANDOFF_FAILPOINTS="before-journal-records", HANDOFF_FAILPOINT_PAUSE=str(marker))
    command = subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], env=env, cwd=str(ROOT),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return lock_taken_at_failpoint(command, marker, journal_path(str(fleet)))


def test_a_lock_taken_after_the_change_keeps_it_and_the_gap_is_journaled(fleet, tmp_path):
    """The lock taken between the ledger's write and its journal record (a failpoint holds the
    command there): the change stays, the error says it is not in the journal, and the next
    append records the gap for that revision."""
    assert handoff("note", fleet, "--set", "first note").returncode == 0
    code, stderr, pid = _journal_held_after_the_change(fleet, tmp_path, "note", str(fleet), "--set", "second note")
    assert code == 1, stderr
    assert "but NOT in the journal: the journal's lock has been held for more than 1s" in stderr
    assert f"pid {pid} (python" in stderr and "the next journal record notes the gap" in stderr
    assert "second note" in fleet.read_text()  # the change itself is kept
    revision = json.loads(handoff("status", fleet, "--json").stdout)["revision"]
    assert handoff("note", fleet, "--set", "third note").returncode == 0
    records = [json.loads(line) for line in open(journal_path(str(fleet)), encoding="utf-8")]
    gaps = [r for r in records if r["kind"] == "journal_gap"]
    assert [g["rev"] for g in gaps] == [revision]
    assert "held for more than 1s" in json.dumps(gaps[0])


def test_an_approval_that_could_not_be_journaled_says_to_give_it_again(fleet, tmp_path):
    """An approve whose journal record is blocked after the ledger's write: the approval has no
    witness and never authorises a run, so the error says how to give it again; a session meeting
    it says its record was lost (the gap names it), where one never approved through the engine is
    "written into the file by hand?"; giving it again works, and the new approval has its record."""
    code, stderr, _ = _journal_held_after_the_change(fleet, tmp_path, "approve", str(fleet), "db-1", "--as", "bob")
    assert code == 1, stderr
    assert "but NOT in the journal: the journal's lock has been held for more than 1s" in stderr
    assert ("An approval with no journal record never authorises a run: once the journal is free, withdraw it and "
            f"approve again (handoff unapprove {fleet} db-1, then handoff approve {fleet} db-1)") in stderr
    assert handoff("note", fleet, "--set", "the next append records the gap").returncode == 0
    # A session meeting it says why it has no witness: its record was lost, not written by hand.
    handle = open_ledger(str(fleet), actor="test")
    ledger = handle.snapshot().ledger
    lost = ledger.targets["db-1"].approvals[0]
    later = parse_iso(lost.at) + 60  # past the recording grace
    why = unauthorised(handle.journal, ledger, "db-1", lost, now=later)
    assert why is not None and not why.settling
    assert (f"the journal record of the approval of cutover by bob at {lost.at} could not be written (journal_gap of "
            "revision ") in why.why and why.why.endswith("so it never authorises a run: approve again")
    forged = lost.model_copy(update={"at": "2026-12-01T00:00:00Z"})  # the same, but never approved by the engine
    assert "written into the file by hand?" in unauthorised(handle.journal, ledger, "db-1", forged, now=later).why
    assert handoff("unapprove", fleet, "db-1", "--as", "bob").returncode == 0
    assert handoff("approve", fleet, "db-1", "--as", "bob").returncode == 0
    records = [json.loads(line) for line in open(journal_path(str(fleet)), encoding="utf-8")]
    approvals = [r for r in records if r["kind"] == "approval"]
    assert len(approvals) == 1 and approvals[0]["target"] == "db-1"
    status = json.loads(handoff("status", fleet, "--json").stdout)
    assert len(status["targets"]["db-1"]["approvals"]) == 1
