"""What people do to a ledger: approve (approvers, no self-approval, one unused approval),
unapprove, reject, note with conflict detection, pause, retry, block and unblock."""

from __future__ import annotations

import pytest
import yaml

from engine.errors import ApprovalChanged, Conflict, NoSuchState, NoSuchTarget, Refused
from engine.ledger import ops
from engine.ledger.model import Ledger
from tests.conftest import RUNBOOK_LEDGER

BOB = ops.Who("bob", "bob")


def fleet(**top) -> Ledger:
    data = yaml.safe_load(RUNBOOK_LEDGER)
    data.update(top)
    return Ledger.model_validate(data)


def test_approve_records_both_identities_and_releases_the_gate():
    """approve stores --as name and OS user, time, comment, hash and checkpoint; db-1 goes back to verified."""
    l = fleet()
    approval, records = ops.approve(l, "db-1", ops.Who("Bob B.", "bob"), step=None, comment="lag 1.4s, go", ledger_dir="/srv")
    t = l.targets["db-1"]
    assert t.state == "verified" and t.awaiting is None and t.awaiting_by is None
    assert (approval.by, approval.user, approval.step, approval.checkpoint, approval.comment) == ("Bob B.", "bob", "cutover", "0/9A3F2C10", "lag 1.4s, go")
    assert len(approval.hash) == 16 and approval.at.endswith("Z")
    assert records[0]["kind"] == "approval" and records[0]["argv"] == ["echo", "cutover", "db-1", "0/9A3F2C10"]


def test_approvers_list_is_checked_against_the_os_user():
    """With `approvers`, the OS user must be listed; the --as name does not help, and a listed login approves as
    itself only."""
    l = fleet(approvers=["carol"])
    with pytest.raises(Refused, match="OS user 'bob' is not in this ledger's approvers"):
        ops.approve(l, "db-1", ops.Who("carol", "bob"), step=None, comment=None, ledger_dir="/srv")
    with pytest.raises(Refused, match="OS user 'carol' approves as carol .*, not as 'anyone'"):
        ops.approve(l, "db-1", ops.Who("anyone", "carol"), step=None, comment=None, ledger_dir="/srv")
    approval, _ = ops.approve(l, "db-1", ops.Who("carol", "carol"), step=None, comment=None, ledger_dir="/srv")
    assert approval.by == "carol"


def test_no_self_approval_by_the_asker():
    """The identity in awaiting_by cannot approve, by --as name or by OS user."""
    for who in (ops.Who("agent", "bob"), ops.Who("bob", "agent")):
        l = fleet()
        with pytest.raises(Refused, match="someone else must approve"):
            ops.approve(l, "db-1", who, step=None, comment=None, ledger_dir="/srv")


def test_second_unused_approval_is_refused_until_unapproved():
    """An unused approval blocks another; unapprove withdraws it and a new approval is accepted."""
    l = fleet()
    ops.approve(l, "db-2", BOB, step="cutover", comment=None, ledger_dir="/srv")
    with pytest.raises(Refused, match="already holds an unused approval"):
        ops.approve(l, "db-2", BOB, step="cutover", comment=None, ledger_dir="/srv")
    ops.unapprove(l, "db-2", BOB)
    assert l.targets["db-2"].approvals == []
    with pytest.raises(Refused, match="no unused approval"):
        ops.unapprove(l, "db-2", BOB)
    ops.approve(l, "db-2", BOB, step="cutover", comment=None, ledger_dir="/srv")


def test_approval_refusals_say_why():
    """Approving a reversible step, a wrong step or without a runbook is refused with the reason; an unknown
    target is a usage error (NoSuchTarget, exit 2)."""
    l = fleet()
    with pytest.raises(Refused, match="reversible and needs no approval"):
        ops.approve(l, "db-5", BOB, step="check", comment=None, ledger_dir="/srv")
    with pytest.raises(Refused, match="awaits approval of cutover, not link"):
        ops.approve(l, "db-1", BOB, step="link", comment=None, ledger_dir="/srv")
    with pytest.raises(NoSuchTarget, match=r"no target named 'db-99' in this ledger \(targets include db-1, db-2, db-3, db-4, db-5\)"):
        ops.approve(l, "db-99", BOB, step=None, comment=None, ledger_dir="/srv")
    bare = Ledger.model_validate({"task": "t", "targets": {"a": {"state": "awaiting_approval", "awaiting": "x"}}})
    with pytest.raises(Refused, match="no runbook"):
        ops.approve(bare, "a", BOB, step=None, comment=None, ledger_dir="/srv")


def test_reject_blocks_with_who_and_why():
    """reject sets the awaiting target blocked with `rejected by WHO: REASON`; a non-awaiting one is refused."""
    l = fleet()
    ops.reject(l, "db-1", ops.Who("Bob B.", "bob"), "lag too high")
    t = l.targets["db-1"]
    assert t.state == "blocked" and t.reason == "rejected by Bob B.: lag too high" and t.awaiting is None
    assert t.touched_at  # it was at verified: mid-change, so it stays touched
    with pytest.raises(Refused, match="not awaiting approval"):
        ops.reject(l, "db-2", BOB, "x")


def test_reject_is_bound_to_the_step_and_hash_the_person_was_shown():
    """A reject bound to what was shown (the step awaited, its hash) is refused when db-1 now awaits
    another step or cutover would run something else (ApprovalChanged, saying nothing was rejected),
    and db-1 is left awaiting; bound to what is there, it blocks db-1."""
    l = fleet()
    shown = ops.pending_command(l, "db-1", "/srv").hash
    with pytest.raises(ApprovalChanged, match="db-1 now awaits approval of cutover, not of promote you were shown; "
                                              "nothing was rejected"):
        ops.reject(l, "db-1", BOB, "x", step="promote", expect_hash=shown, ledger_dir="/srv")
    l.targets["db-1"].checkpoint = "0/9A3F2C99"
    with pytest.raises(ApprovalChanged, match=f"what cutover would run changed since you looked \\(you saw hash {shown}, "
                                              "now .*nothing was rejected"):
        ops.reject(l, "db-1", BOB, "x", step="cutover", expect_hash=shown, ledger_dir="/srv")
    assert l.targets["db-1"].state == "awaiting_approval"
    ops.reject(l, "db-1", BOB, "x", step="cutover", expect_hash=ops.pending_command(l, "db-1", "/srv").hash, ledger_dir="/srv")
    assert l.targets["db-1"].state == "blocked"


def test_note_set_and_conflict():
    """set_note records author and time; with a stale base it raises Conflict carrying the current note."""
    l = fleet()
    ops.set_note(l, BOB, "db-18 waits on approval", base="first note")
    assert (l.handoff_note, l.handoff_note_by) == ("db-18 waits on approval", "bob") and l.handoff_note_at
    with pytest.raises(Conflict) as caught:
        ops.set_note(l, BOB, "mine", base="first note")
    assert caught.value.theirs == "db-18 waits on approval" and "changed by bob" in str(caught.value)


def test_pause_and_unpause():
    """pause records by/why/at; unpause lifts it; unpausing an unpaused ledger is refused."""
    l = fleet()
    ops.pause(l, BOB, "error spike")
    assert (l.paused.by, l.paused.why) == ("bob", "error spike")
    ops.unpause(l, BOB)
    assert l.paused is None
    with pytest.raises(Refused, match="not paused"):
        ops.unpause(l, BOB)


def test_retry_after_reversible_failure_goes_back():
    """db-4 failed in the reversible check: retry puts it back to queued."""
    l = fleet()
    ops.retry(l, "db-4", BOB, force=False, reason=None)
    assert l.targets["db-4"].state == "queued" and l.targets["db-4"].reason is None


def test_retry_after_irreversible_failure_needs_force_and_reason():
    """db-3 failed in the irreversible link: refused; --force without reason refused; with both it goes to checked."""
    l = fleet()
    with pytest.raises(Refused, match="irreversible and may have half-happened"):
        ops.retry(l, "db-3", BOB, force=False, reason=None)
    with pytest.raises(Refused, match="--force needs --reason"):
        ops.retry(l, "db-3", BOB, force=True, reason=" ")
    records = ops.retry(l, "db-3", BOB, force=True, reason="checked by hand: link never started")
    assert l.targets["db-3"].state == "checked" and records[0]["forced"] is True
    with pytest.raises(Refused, match="not failed"):
        ops.retry(l, "db-3", BOB, force=False, reason=None)


def test_block_and_unblock():
    """block keeps the reason; unblock needs a real state and clears the reason; done cannot be blocked."""
    l = fleet()
    ops.block(l, "db-5", BOB, "app freeze")
    assert (l.targets["db-5"].state, l.targets["db-5"].reason) == ("blocked", "blocked by bob: app freeze")
    with pytest.raises(NoSuchState, match="no state named 'nowhere' in this ledger"):  # usage: not a state at all
        ops.unblock(l, "db-5", BOB, "nowhere", "x")
    with pytest.raises(Refused, match="choose one of"):  # a state, but not one a target is unblocked to
        ops.unblock(l, "db-5", BOB, "awaiting_approval", "x")
    ops.unblock(l, "db-5", BOB, "queued", "freeze over")
    assert l.targets["db-5"].state == "queued" and l.targets["db-5"].reason is None
    l.targets["db-5"].state = "done"
    with pytest.raises(Refused, match="is done"):
        ops.block(l, "db-5", BOB, "x")
