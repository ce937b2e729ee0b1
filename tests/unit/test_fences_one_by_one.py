"""The fence on a spawn, one condition at a time (issue 22): every condition holds but one,
and only that one stops the step's process from starting.

Under the ledger's lock the holder re-reads the ledger and confirms: it still holds the
lease, the target's intent token is its own, the intent's attempt is its own, its
heartbeat still beats, the ledger did not go back in time, and (irreversible steps) the
approval is still on the target and still has its witness. Each test breaks exactly one
of them the way the world breaks it; removing that one check from the engine makes that
test, and only it, start the step (bench/mutants.py does exactly that). File store and
the local PostgreSQL; a real step process that counts its own starts.
"""

from __future__ import annotations

import psycopg
import pytest
from fence_kit import SID, Fleet, holder, intent, make_fleet, said

from engine.errors import Refused
from engine.lease.rules import HeartbeatThread
from engine.session.steps import run_intent

KINDS = ["file", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=KINDS)
def fleet(request, tmp_path) -> Fleet:
    return make_fleet(tmp_path, request.param)


def _fenced(fleet: Fleet, actor, it, words: str) -> None:
    """Nothing started, the holder says why and stops acting, the intent stays for whoever decides now."""
    run_intent(actor, it)
    assert fleet.starts() == [], said(actor)
    assert f"{it.step.name} NOT started" in said(actor) and words in said(actor), said(actor)
    assert actor.ending and words in actor.ending


def test_with_every_condition_met_the_step_starts_once(fleet: Fleet) -> None:
    """The control: nothing broken, the reversible check runs once and is recorded."""
    actor = holder(fleet)
    run_intent(actor, intent(actor, "a", "check"))
    assert fleet.starts() == ["check a"]
    assert actor.store.read().targets["a"].state == "checked" and actor.ending is None


def test_another_holders_lease_fences_the_spawn(fleet: Fleet) -> None:
    """Taken over after the intent (the intent and its token still on the target): not started."""
    actor = holder(fleet)
    it = intent(actor, "a", "check")

    def taken_over(ledger):
        ledger.session.id = "someone-else"

    actor.store.transact(taken_over)
    _fenced(fleet, actor, it, "no longer holds the lease (it is someone-else's now)")


def test_an_intent_token_that_is_no_longer_ours_fences_the_spawn(fleet: Fleet) -> None:
    """The lease is still ours, but the target's intent was replaced (a reconcile, then another intent): not started."""
    actor = holder(fleet)
    it = intent(actor, "a", "check")

    def replaced(ledger):
        ledger.targets["a"].in_flight.token = f"{SID}/another"

    actor.store.transact(replaced)
    _fenced(fleet, actor, it, "no longer holds this session's intent on a")


def test_a_later_attempt_fences_an_earlier_one(fleet: Fleet) -> None:
    """Lease and token ours, but a retry on another worker claimed attempt 2: attempt 1 never starts."""
    actor = holder(fleet)
    it = intent(actor, "a", "check")

    def later(ledger):
        ledger.targets["a"].in_flight.attempt = 2

    actor.store.transact(later)
    _fenced(fleet, actor, it, "attempt 2 of check on a has taken over from this one")


def test_a_holder_whose_heartbeat_was_replaced_starts_nothing(fleet: Fleet) -> None:
    """Ledger unchanged, but another holder's fresh heartbeat replaced ours: we were taken over in all but the ledger."""
    actor = holder(fleet)
    it = intent(actor, "a", "check")
    actor.beat = HeartbeatThread(actor.store.heartbeat(), SID)
    assert actor.beat.beat()
    actor.store.heartbeat().write("someone-else", phase="taking over")
    actor.beat.beat()
    _fenced(fleet, actor, it, "was taken over")


def _restore_row_or_file(fleet: Fleet, actor, before: tuple) -> None:
    """Put the ledger back as it was (an editor's stale buffer saved over the file; a DBA's restore of the row)."""
    if fleet.kind == "file":
        with open(fleet.location, "wb") as fh:
            fh.write(before[0])
        return
    name = fleet.location.split("#", 1)[1]
    with psycopg.connect(fleet.location.split("#", 1)[0], autocommit=True) as conn:
        conn.execute("UPDATE handoff_ledger SET revision = %s, body = %s WHERE name = %s", (before[1], before[0], name))


def _saved(fleet: Fleet) -> tuple:
    if fleet.kind == "file":
        return (open(fleet.location, "rb").read(), None)
    name = fleet.location.split("#", 1)[1]
    with psycopg.connect(fleet.location.split("#", 1)[0], autocommit=True) as conn:
        revision, body = conn.execute("SELECT revision, body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()
    return (body, revision)


def test_a_ledger_that_went_back_in_time_under_the_fence_starts_nothing(fleet: Fleet) -> None:
    """The copy put back holds our lease and our intent (taken right after it), but later
    writes happened: the fence refuses the rolled-back ledger before the spawn."""
    actor = holder(fleet)
    it = intent(actor, "a", "check")
    before = _saved(fleet)

    def note(ledger):
        ledger.handoff_note = "a person's note, written after the intent"

    actor.store.transact(note)
    actor.store.transact(note)  # a second write: the record, the journal and the mark all move on
    _restore_row_or_file(fleet, actor, before)
    with pytest.raises(Refused, match="went back in time"):
        run_intent(actor, it)
    assert fleet.starts() == []


def _approved_link(fleet: Fleet):
    """b's irreversible link, approved by a person (the real CLI), its intent written."""
    fleet.cli("approve", fleet.location, "b", "--yes", "--as", "alice")
    actor = holder(fleet)
    it = intent(actor, "b", "link")
    assert it.decision.approval is not None and it.decision.approval.by == "alice"
    return actor, it


def test_an_approval_taken_off_the_target_after_the_intent_fences_the_spawn(fleet: Fleet) -> None:
    """Lease, token and attempt ours; the approval was withdrawn from the target since: link is not started."""
    actor, it = _approved_link(fleet)

    def withdrawn(ledger):
        ledger.targets["b"].approvals = []

    actor.store.transact(withdrawn)
    _fenced(fleet, actor, it, "the approval of link by alice")
    assert "is no longer in the ledger" in said(actor)


def test_an_approval_whose_witness_no_longer_matches_fences_the_spawn(fleet: Fleet) -> None:
    """Still on the target, but its user rewritten in the ledger: the journal's witness does not match it at the spawn."""
    actor, it = _approved_link(fleet)

    def rewritten(ledger):
        ledger.targets["b"].approvals[0].user = "mallory"

    actor.store.transact(rewritten)
    _fenced(fleet, actor, it, "approval not recorded by the engine")


def test_an_approved_link_with_every_condition_met_starts_once(fleet: Fleet) -> None:
    """The control for the irreversible tests: the approved link runs once."""
    actor, it = _approved_link(fleet)
    run_intent(actor, it)
    assert fleet.starts() == ["link b"]
    assert actor.store.read().targets["b"].state == "linked"
