"""The touched set kept per snapshot (engine.ledger.touched): what the guard counts is always
what a full look at every target says, through transactions that make targets touched
and untouched, on the store's snapshots and on a transaction's copy-on-write ledger."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ledger.model import InFlight
from engine.ledger.touched import _awaiting_from, _scan, touched, touched_states
from engine.store.file import FileStore

CHANGES = st.lists(st.tuples(st.sampled_from(["db-1", "db-2", "db-3", "db-4", "db-5"]),
                             st.sampled_from(["in_flight", "clear", "queued", "replicating", "done", "failed-touched",
                                              "failed", "awaiting link", "awaiting cutover"])), max_size=6)


def full_scan(ledger) -> list[str]:
    return _scan(dict.items(ledger.targets), touched_states(ledger), _awaiting_from(ledger))


def apply(t, what: str) -> None:
    if what == "in_flight":
        t.in_flight = InFlight(step="check")
    elif what == "clear":
        t.in_flight = None
    elif what.startswith("failed"):
        t.state, t.touched_at = "failed", ("2026-12-01T00:00Z" if what.endswith("touched") else None)
    elif what.startswith("awaiting"):
        t.state, t.awaiting = "awaiting_approval", what.split()[1]
    else:
        t.state = what


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(CHANGES, CHANGES)
def test_touched_matches_a_full_scan_in_and_between_transactions(fleet, first, second):
    store = FileStore(str(fleet))
    seen = []

    def change(changes):
        def fn(ledger):
            seen.append((touched(ledger), full_scan(ledger)))  # before: the sealed snapshot's list
            for name, what in changes:
                apply(ledger.targets[name], what)
                seen.append((touched(ledger), full_scan(ledger)))  # after each change, incrementally
        return fn

    store.transact(change(first))
    snap = store.read()
    assert touched(snap) == full_scan(snap)
    assert touched(snap) == full_scan(snap)  # the remembered answer, asked again
    store.transact(change(second))
    snap = store.read()
    assert touched(snap) == full_scan(snap)
    for got, want in seen:
        assert got == want


def test_guard_counts_a_target_made_touched_in_the_same_transaction(fleet):
    """The limit is 2; db-1 (awaiting cutover) and db-2 (verified) are touched. In one
    transaction db-5 gets a step in flight and db-1 goes back to checked: the guard
    inside that transaction counts db-2 and db-5, and refuses db-1 a third slot."""
    from engine.ledger import guard

    store = FileStore(str(fleet))

    def fn(ledger):
        before = touched(ledger)
        ledger.targets["db-5"].in_flight = InFlight(step="check")
        step = ledger.step("link")
        ledger.targets["db-1"].state = "checked"  # db-1 was awaiting cutover (touched): now not
        return before, touched(ledger), guard.check(ledger, "db-1", step, ledger_dir=str(fleet.parent)).reason

    (before, after, reason), _ = store.transact(fn)
    assert before == ["db-1", "db-2"] and after == ["db-2", "db-5"]
    assert "touched 2/2; db-1 would make 3" in reason


def test_a_runbook_changed_in_the_transaction_is_not_answered_from_the_snapshot(fleet):
    """What is remembered is per runbook: a transaction that makes every step reversible
    has no touched states left, and db-2 (verified) is no longer touched in it."""
    store = FileStore(str(fleet))
    assert touched(store.read()) == ["db-1", "db-2"]

    def fn(ledger):
        for step in ledger.runbook.steps:
            step.reversible = True
        return touched(ledger), full_scan(ledger)

    (got, want), _ = store.transact(fn)
    assert got == want == []


def test_a_target_removed_and_put_back_is_listed_where_the_ledger_holds_it(fleet):
    """db-1 (awaiting cutover, touched) is taken out and put back in one transaction: inside
    it, db-1 stands last in the transaction's dict, so it is listed after db-5. The file keeps
    db-1 where it was (engine.codec.splice), and so does the snapshot the write leaves
    (engine.store.file.as_written): first again, as a full look and a fresh read say."""
    store = FileStore(str(fleet))
    assert touched(store.read()) == ["db-1", "db-2"]

    def fn(ledger):
        ledger.targets["db-5"].in_flight = InFlight(step="check")
        ledger.targets["db-1"] = ledger.targets.pop("db-1")
        return touched(ledger), full_scan(ledger)

    (got, want), _ = store.transact(fn, accept_shrink=True)
    assert got == want == ["db-2", "db-5", "db-1"]
    snap = store.read()
    assert touched(snap) == full_scan(snap) == touched(FileStore(str(fleet)).read()) == ["db-1", "db-2", "db-5"]
