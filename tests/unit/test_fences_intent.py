"""What stands before and after a spawn besides the lock's own checks, one condition at a
time: the lease taken, the intent transaction (lease, one intent per target, the
approval's witness, the journal's record of an earlier use), the probe asked before an
irreversible run, and the record of the outcome (only over our own intent).

As in test_fences_one_by_one: every condition holds but the one broken, so removing that
check alone from the engine makes this test start a step or write what it must not
(bench/mutants.py). Real ledger files, real step processes counting their starts.
"""

from __future__ import annotations

import pytest
from fence_kit import SID, holder, intent, make_fleet, said

from engine.codec.timefmt import now_iso
from engine.errors import LeaseHeld
from engine.ledger.guard import Decision
from engine.ledger.model import Approval
from engine.ledger.render import approval_hash
from engine.planners.autopilot import Action
from engine.session.runner import run_step
from engine.session.steps import Outcome, record_outcome, run_intent, write_intent


def test_a_second_holder_never_takes_a_live_lease(tmp_path) -> None:
    """A live holder's lease (fresh heartbeat): another session's acquire is refused, the lease unchanged."""
    fleet = make_fleet(tmp_path, "file")
    holder(fleet)
    with pytest.raises(LeaseHeld, match="another session drives this ledger"):
        holder(fleet, sid="fences-second-holder")
    assert fleet.handle().store.read().session.id == SID


def test_no_intent_is_written_by_a_session_that_lost_the_lease(tmp_path) -> None:
    """The proposal was made while holding the lease; the lease moved on before the intent: nothing is written."""
    fleet = make_fleet(tmp_path, "file")
    actor = holder(fleet)
    step = actor.store.read().step("check")

    def taken_over(ledger):
        ledger.session.id = "someone-else"

    actor.store.transact(taken_over)
    before = open(fleet.location, "rb").read()
    decided = write_intent(actor, Action("a", step), [])
    assert isinstance(decided, Decision) and not decided.allowed
    assert decided.reason == "this session no longer holds the lease"
    assert open(fleet.location, "rb").read() == before


def test_a_target_with_a_step_in_flight_gets_no_second_intent(tmp_path) -> None:
    """The guard under the intent's transaction: one intent per target; the first one's token stays."""
    fleet = make_fleet(tmp_path, "file")
    actor = holder(fleet)
    first = intent(actor, "a", "check")
    step = actor.store.read().step("check")
    again = write_intent(actor, Action("a", step), [])
    assert isinstance(again, Decision) and "already has check in flight" in again.reason
    assert actor.store.read().targets["a"].in_flight.token == first.token


def test_an_approval_without_its_witness_gets_no_intent(tmp_path) -> None:
    """The real hash, written into the ledger by something other than `handoff approve` (no journal record):
    no intent, the target awaits a person again with why, the entry taken off."""
    fleet = make_fleet(tmp_path, "file")
    actor = holder(fleet)
    ledger = actor.store.read()
    digest = approval_hash("b", ledger.targets["b"], ledger.step("link"), ledger_dir=str(fleet.folder))

    def forged(ledger):
        ledger.targets["b"].approvals = [Approval(by="alice", user="alice", at="2026-09-10T02:00:00Z", step="link",
                                                  hash=digest, checkpoint="0/B")]

    actor.store.transact(forged)
    decided = write_intent(actor, Action("b", ledger.step("link")), [])
    assert isinstance(decided, Decision) and not decided.allowed
    assert "approval not recorded by the engine" in decided.reason
    target = actor.store.read().targets["b"]
    assert target.in_flight is None and target.state == "awaiting_approval" and target.approvals == []
    assert "approval not recorded by the engine" in target.reason
    assert fleet.starts() == []


def test_the_journal_alone_refuses_an_approval_used_before(tmp_path, monkeypatch) -> None:
    """link ran once under alice's approval; the ledger is then put back to say it is unused (a stale copy a
    person accepted), and this user's high-water mark is not there (another user, another host): the journal's
    step_start under that approval refuses the intent."""
    fleet = make_fleet(tmp_path, "file")
    fleet.cli("approve", fleet.location, "b", "--yes", "--as", "alice")
    actor = holder(fleet)
    run_intent(actor, intent(actor, "b", "link"))
    assert fleet.starts() == ["link b"]

    def stale(ledger):
        t = ledger.targets["b"]
        t.state, t.touched_at = "checked", None
        for approval in t.approvals:
            approval.used_at = approval.used_by = None

    actor.store.transact(stale)
    # Another user's state folder: no high-water mark of this use, so only the journal can refuse it.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-users-state"))
    decided = write_intent(actor, Action("b", actor.store.read().step("link")), [])
    assert isinstance(decided, Decision) and not decided.allowed, decided
    assert "was already used (journal: link started at" in decided.reason
    assert actor.store.read().targets["b"].in_flight is None
    assert fleet.starts() == ["link b"]


def test_a_probe_that_proves_the_link_happened_starts_nothing(tmp_path) -> None:
    """Every fence holds and the approval is good, but link's own verify proves it already happened: recorded, not run."""
    fleet = make_fleet(tmp_path, "file", probe=True)
    fleet.cli("approve", fleet.location, "b", "--yes", "--as", "alice")
    actor = holder(fleet)
    it = intent(actor, "b", "link")
    (fleet.folder / "linked.txt").write_text("0/F00D\n")
    run_intent(actor, it)
    assert fleet.starts() == [], said(actor)
    target = actor.store.read().targets["b"]
    assert target.state == "linked" and target.checkpoint == "0/F00D" and target.in_flight is None
    assert "link already happened: probe says 0/F00D; not run" in said(actor)


def test_a_step_that_ends_after_a_humans_decision_never_records_over_it(tmp_path) -> None:
    """The check ran; meanwhile a person cleared the intent and blocked the target: their record stands."""
    fleet = make_fleet(tmp_path, "file")
    actor = holder(fleet)
    it = intent(actor, "a", "check")
    ran = run_step(it.argv, timeout=30)
    assert ran.ok and fleet.starts() == ["check a"]

    def human(ledger):
        t = ledger.targets["a"]
        t.in_flight, t.state, t.reason = None, "blocked", "human: the app team froze this one"
        t.changed_at = now_iso()

    actor.store.transact(human)
    record_outcome(actor, it, Outcome(ran, True), None)
    target = actor.store.read().targets["a"]
    assert (target.state, target.reason) == ("blocked", "human: the app team froze this one")
    assert "the intent was cleared by someone else; their record stands" in said(actor)
