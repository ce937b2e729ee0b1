"""The autopilot's walk starts after the targets at a snapshot's head that cannot move
(engine.ledger.sealed `start`): what it proposes is always what a walk over every target
says, on the store's snapshots, through writes that make targets movable and unmovable
ahead of, at and behind where the last walk started."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ledger import sealed
from engine.ledger.model import InFlight
from engine.planners.autopilot import Autopilot
from engine.store.file import FileStore

NAMES = [f"db-{i}" for i in range(6)]
LEDGER = """\
task: proposals
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: [echo, check]}
  - {name: sync, from: checked, to: done, reversible: true, run: [echo, sync]}
targets:
""" + "".join(f"  {name}: {{state: done}}\n" for name in NAMES[:4]) + "".join(f"  {name}: {{state: queued}}\n" for name in NAMES[4:])

CHANGES = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(["done", "queued", "checked", "awaiting", "in_flight", "clear"])),
                   max_size=5)


def apply(t, what: str) -> None:
    if what == "in_flight":
        t.in_flight = InFlight(step="check")
    elif what == "clear":
        t.in_flight = None
    elif what == "awaiting":
        t.state, t.awaiting = "awaiting_approval", "sync"
    else:
        t.state = what


def every_target(ledger, busy=frozenset()) -> list[tuple[str, str]]:
    """The proposals as a walk over every target makes them."""
    first = {s.from_: s.name for s in reversed(ledger.steps())}
    return [(name, first[t.state]) for name, t in ledger.targets.items()
            if name not in busy and t.in_flight is None and t.state != "awaiting_approval" and t.state in first]


def proposed(ledger, busy=frozenset()) -> list[tuple[str, str]]:
    return [(a.target, a.step.name) for a in Autopilot().proposals(ledger, busy)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(CHANGES, min_size=1, max_size=4), st.sampled_from([frozenset(), frozenset({"db-4"}), frozenset(NAMES[:5])]))
def test_proposals_match_a_walk_over_every_target_through_writes(tmp_path_factory, writes, busy):
    path = tmp_path_factory.mktemp("proposals") / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    store = FileStore(str(path))
    for changes in writes:
        snap = store.read()
        assert proposed(snap, busy) == every_target(snap, busy)
        next(Autopilot().proposals(snap), None)  # a session's walk: it stops at the first it can start

        def fn(ledger, changes=changes):
            for name, what in changes:
                apply(ledger.targets[name], what)
            assert proposed(ledger, busy) == every_target(ledger, busy)  # inside the transaction too

        store.transact(fn)
    snap = store.read()
    assert proposed(snap, busy) == every_target(snap, busy)
    assert proposed(snap, busy) == every_target(snap, busy)  # the remembered start, asked again


def test_the_walk_skips_the_done_head_and_a_write_ahead_of_it_is_seen(tmp_path):
    """Four done targets head the ledger: after one walk the next starts at db-4. A write that
    makes db-1 movable again moves the start back to it, on the snapshot that write made."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    store = FileStore(str(path))
    rules = ("movable", frozenset({"queued", "checked"}))
    snap = store.read()
    assert proposed(snap) == [("db-4", "check"), ("db-5", "check")]
    assert sealed.start(snap.targets, rules) == 4

    def requeue(ledger):
        ledger.targets["db-1"].state = "queued"

    store.transact(requeue)
    snap = store.read()
    assert sealed.start(snap.targets, rules) == 1  # carried over the write, never past db-1
    assert proposed(snap) == [("db-1", "check"), ("db-4", "check"), ("db-5", "check")]


def test_a_write_that_removes_or_adds_a_target_starts_the_walk_afresh(tmp_path):
    """Positions move when a target leaves (db-4 becomes the fourth) or a new one comes, and a
    transaction may take one out and put it back (last in its dict; the file, and the snapshot
    the write leaves, keep it in place): the start known for the snapshot before is not carried
    over such a write."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    store = FileStore(str(path))
    assert proposed(store.read()) == [("db-4", "check"), ("db-5", "check")]  # the walk now starts at 4

    def shrink(ledger):
        del ledger.targets["db-0"]

    store.transact(shrink, accept_shrink=True)
    assert proposed(store.read()) == [("db-4", "check"), ("db-5", "check")]

    def grow(ledger):
        ledger.targets["db-6"] = ledger.targets["db-5"].model_copy(deep=True)

    store.transact(grow)
    assert proposed(store.read()) == [("db-4", "check"), ("db-5", "check"), ("db-6", "check")]

    def move_last(ledger):  # as many targets as before; in the transaction's dict db-1 stands last
        ledger.targets["db-1"] = ledger.targets.pop("db-1")

    store.transact(move_last, accept_shrink=True)
    assert proposed(store.read()) == proposed(FileStore(str(path)).read()) == [("db-4", "check"), ("db-5", "check"), ("db-6", "check")]


def test_a_write_that_swaps_one_target_for_another_starts_the_walk_afresh(tmp_path):
    """One target out and a new one in, in one transaction: as many targets as before, but
    not the same names. Nothing known of the snapshot before is carried over (the new
    target has no place in it); the walk over the new snapshot says what a fresh read says."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    store = FileStore(str(path))
    assert proposed(store.read()) == [("db-4", "check"), ("db-5", "check")]  # the walk now starts at 4

    def swap(ledger):
        del ledger.targets["db-0"]
        ledger.targets["db-9"] = ledger.targets["db-5"].model_copy(deep=True)

    store.transact(swap, accept_shrink=True)
    want = [("db-4", "check"), ("db-5", "check"), ("db-9", "check")]
    assert proposed(store.read()) == proposed(FileStore(str(path)).read()) == want


def test_what_another_thread_notes_while_a_write_is_sealed_breaks_nothing():
    """A session's main loop notes what it found on a snapshot while a worker's write made
    from that snapshot is being sealed: the carry looks at each changed target (the tests
    below add an entry right then, as that other thread would), and neither breaks."""
    from itertools import count

    from engine.ledger.model import Target
    from engine.store.cow import CowTargets

    base = {name: Target(state="done") for name in NAMES[:4]} | {name: Target(state="queued") for name in NAMES[4:]}
    sealed.seal(base)
    fresh = count()

    def movable(target) -> bool:  # noting a walk's start under a new key, mid-carry
        sealed.found_at(base, ("meanwhile", next(fresh)), movable, 0)
        return target.state == "queued"

    def queued(target) -> bool:  # asking for a new list of names, mid-carry
        sealed.names(base, ("meanwhile", next(fresh)), lambda t: t.state == "done")
        return target.state == "queued"

    sealed.found_at(base, "movable", movable, 4)
    assert sealed.names(base, "queued", queued) == ["db-4", "db-5"]
    cow = CowTargets(base)
    cow["db-1"].state = "queued"
    new = cow.plain()
    sealed.seal(new, cow)
    assert sealed.start(new, "movable") == 1
    assert sealed.names(new, "queued", queued) == ["db-1", "db-4", "db-5"]


def test_sealing_from_several_threads_never_loses_an_entry_under_another(monkeypatch):
    """One thread finds a snapshot's entry; before it marks it as the newest, another thread
    seals four snapshots (as many as are kept). Sealing is one step for each thread, so the
    first finishes before the second evicts anything, and neither raises."""
    import threading
    import time

    first = {"db-0": object()}
    others = [{"db-0": object()} for _ in range(sealed._MAX)]
    sealed.seal(first)
    real = sealed._entry
    errors: list[BaseException] = []

    def seal_others() -> None:
        try:
            for other in others:
                sealed.seal(other)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def entry_then_others(targets):
        found = real(targets)
        if targets is first and found is not None:
            monkeypatch.setattr(sealed, "_entry", real)
            meanwhile = threading.Thread(target=seal_others)
            meanwhile.start()
            meanwhile.join(0.3)  # it waits for this seal to end, or (unguarded) evicts `first` now
        return found

    monkeypatch.setattr(sealed, "_entry", entry_then_others)
    sealed.seal(first)
    for _ in range(50):
        if all(sealed._entry(o) is not None for o in others):
            break
        time.sleep(0.02)
    assert errors == []
    assert all(sealed._entry(o) is not None for o in others)
