"""Copy on change (engine.store.cow): a transaction changes targets through every path
callers use (attributes, nested models, lists and dicts in place, views taken before a
change, whole targets replaced or removed), and the readers' shared snapshot never
changes; the transaction ends with exactly what the same changes make of plain objects,
and every target that differs is in `changed | removed` (so it is dumped and written).
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ledger.model import Approval, Evidence, InFlight, Target
from engine.store.cow import CowTargets, cow_ledger, shared_values
from engine.store.cow_views import ModelView
from engine.store.file import FileStore

WORDS = st.sampled_from(["a", "b", "0/9A3F2C10", "queued", "done", "x y"])


def approval(word: str) -> Approval:
    return Approval(by=word, user="u", at="2026-12-01T00:00Z", step="link", hash=f"h{word}")


@st.composite
def targets(draw) -> dict[str, Target]:
    out = {}
    for i in range(draw(st.integers(2, 4))):
        t = Target(state=draw(st.sampled_from(["queued", "checked", "done"])), checkpoint=draw(st.none() | WORDS))
        t.approvals = [approval(w) for w in draw(st.lists(WORDS, max_size=3))]
        if draw(st.booleans()):
            t.in_flight = InFlight(step="link", pid=draw(st.integers(1, 9)))
        if draw(st.booleans()):
            t.evidence = Evidence(step="check", exit_code=0)
        if draw(st.booleans()):
            setattr(t, "notes", {"k": [draw(WORDS)], "n": draw(st.integers(0, 3))})  # an unknown key, kept
        out[f"db-{i}"] = t
    return out


def _first(t):
    return t.approvals[0] if t.approvals else None


# Each operation: (name, fn(targets, name, word)); the same code runs on plain objects
# (the reference) and on the copy-on-write dict.
OPS = {
    "set state": lambda ts, n, w: setattr(ts[n], "state", w),
    "set checkpoint via get": lambda ts, n, w: setattr(ts.get(n), "checkpoint", w),
    "in_flight pid": lambda ts, n, w: ts[n].in_flight and setattr(ts[n].in_flight, "pid", 42),
    "in_flight new": lambda ts, n, w: setattr(ts[n], "in_flight", InFlight(step=w)),
    "in_flight none": lambda ts, n, w: setattr(ts[n], "in_flight", None),
    "evidence code": lambda ts, n, w: ts[n].evidence and setattr(ts[n].evidence, "exit_code", 7),
    "approvals append": lambda ts, n, w: ts[n].approvals.append(approval(w)),
    "approvals insert": lambda ts, n, w: ts[n].approvals.insert(0, approval(w)),
    "approvals pop": lambda ts, n, w: ts[n].approvals and ts[n].approvals.pop(),
    "approvals clear": lambda ts, n, w: ts[n].approvals.clear(),
    "approvals setitem": lambda ts, n, w: ts[n].approvals and ts[n].approvals.__setitem__(0, approval(w)),
    "approvals delitem": lambda ts, n, w: ts[n].approvals and ts[n].approvals.__delitem__(0),
    "approvals iadd": lambda ts, n, w: _iadd(ts[n], w),
    "approvals sort": lambda ts, n, w: ts[n].approvals.sort(key=lambda a: a.by),
    "approvals reverse": lambda ts, n, w: ts[n].approvals.reverse(),
    "approval used": lambda ts, n, w: _first(ts[n]) and setattr(ts[n].approvals[0], "used_at", w),
    "approval iter used": lambda ts, n, w: [setattr(a, "used_by", w) for a in ts[n].approvals],
    "old view after insert": lambda ts, n, w: _old_view(ts[n], w),
    "filter approvals": lambda ts, n, w: setattr(ts[n], "approvals", [a for a in ts[n].approvals if a.by != w]),
    "approvals from another": lambda ts, n, w: setattr(ts[n], "approvals", _own(ts, ts[_other(ts, n)].approvals)),
    "notes set": lambda ts, n, w: getattr(ts[n], "notes", None) is not None and ts[n].notes.__setitem__("k2", w),
    "notes nested append": lambda ts, n, w: getattr(ts[n], "notes", None) is not None and ts[n].notes["k"].append(w),
    "notes update": lambda ts, n, w: getattr(ts[n], "notes", None) is not None and ts[n].notes.update(z=w),
    "model_extra": lambda ts, n, w: ts[n].model_extra.__setitem__("extra2", w),
    "__dict__": lambda ts, n, w: ts[n].__dict__.__setitem__("reason", w),
    "model_copy shares": lambda ts, n, w: ts[n].model_copy().approvals.append(approval(w)),
    "delattr extra": lambda ts, n, w: getattr(ts[n], "notes", None) is not None and delattr(ts[n], "notes"),
    "replace target": lambda ts, n, w: ts.__setitem__(n, Target(state=w)),
    "copy another": lambda ts, n, w: ts.__setitem__(n, _own(ts, ts[_other(ts, n)])),
    "stale view": lambda ts, n, w: _stale(ts, n, w),
    "delete": lambda ts, n, w: len(ts) > 1 and ts.__delitem__(n),
    "delete and put back": lambda ts, n, w: ts.__setitem__(n, ts.pop(n)),  # it now stands last
    "pop": lambda ts, n, w: len(ts) > 1 and ts.pop(n).approvals.append(approval(w)),
    "setdefault new": lambda ts, n, w: ts.setdefault(f"new-{w}", Target(state="queued")),
    "update": lambda ts, n, w: ts.update({n: Target(state=w)}),
    "values": lambda ts, n, w: [setattr(t, "last_action", w) for t in ts.values() if t.state == "done"],
    "items": lambda ts, n, w: [setattr(t, "next_action", k) for k, t in ts.items() if k == n],
}


def _iadd(t, w):
    t.approvals += [approval(w)]


def _old_view(t, w):
    if t.approvals:
        a = t.approvals[0]
        t.approvals.insert(0, approval("fresh"))
        a.comment = w  # the approval it was taken from, not the one now first


def _own(ts, value):
    """Plain objects alias when assigned across targets; the copy-on-write dict stores a
    copy (one object in two targets would be one bug more): the reference does the same."""
    return value if isinstance(ts, CowTargets) else copy.deepcopy(value)


def _other(ts, n):
    return next(k for k in ts if k != n) if len(ts) > 1 else n


def _stale(ts, n, w):
    old = ts[n]
    ts[n] = Target(state="queued")
    old.state = w  # an object no longer in the dict: changes nothing the ledger holds
    old.approvals.append(approval(w))


def dumps(ts) -> dict:
    return {k: t.model_dump() for k, t in dict.items(ts)}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets(), st.lists(st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 5), WORDS), max_size=8))
def test_changes_never_reach_the_shared_snapshot_and_match_plain_objects(shared, ops):
    before = dumps(shared)
    reference = copy.deepcopy(shared)
    cow = CowTargets(shared)
    for op, i, word in ops:
        for ts in (reference, cow):
            names = list(ts)
            OPS[op](ts, names[i % len(names)], word)
    assert dumps(shared) == before, "a change leaked into the readers' snapshot"
    plain = cow.plain()
    after = dumps(plain)
    assert after == dumps(reference)
    assert list(plain) == list(reference), "the targets' order differs from the same changes on plain objects"
    assert type(plain) is dict and not any(type(t) is ModelView for t in plain.values()), "a view left in the written targets"
    differ = {n for n in set(before) | set(after) if before.get(n) != after.get(n)}
    assert differ <= cow.changed | cow.removed, "a changed target would not be written"


@settings(max_examples=100, deadline=None)
@given(targets(), st.lists(st.sampled_from(sorted(OPS)), max_size=4))
def test_reads_copy_nothing(shared, ops):
    """Reading, however deep, leaves `changed` empty and hands out no shared mutable object."""
    cow = CowTargets(shared)
    for name in list(cow):
        t = cow[name]
        _ = (t.state, t.in_flight and t.in_flight.pid, [a.hash for a in t.approvals], t.model_dump(), t == shared[name],
             len(t.approvals), t.evidence and t.evidence.exit_code, getattr(t, "notes", None) and dict(t.notes.items()))
        assert isinstance(t, Target)
        assert t.approvals is not shared[name].approvals
    assert cow.changed == set() and [id(t) for t in shared_values(cow)] == [id(t) for t in shared.values()]


def test_a_transaction_writes_only_the_target_it_changed(tmp_path, fleet):
    """Through the real store: reading every target copies none; the one changed is written."""
    store = FileStore(str(fleet))
    snap = store.read()
    before = dumps(snap.targets)
    seen = {}

    def fn(ledger):
        _ = [(t.state, t.approvals, t.in_flight) for t in ledger.targets.values()]
        seen["after reads"] = set(ledger.targets.changed)
        ledger.targets["db-5"].approvals.append(approval("ann"))
        seen["after change"] = set(ledger.targets.changed)

    store.transact(fn)
    assert seen == {"after reads": set(), "after change": {"db-5"}}
    assert dumps(snap.targets) == before
    assert store.read().targets["db-5"].approvals[0].by == "ann"


def test_cow_ledger_top_level_is_private(fleet):
    """The top level (runbook, invariants, note) is the transaction's own copy."""
    snap = FileStore(str(fleet)).read()
    ledger = cow_ledger(snap)
    ledger.runbook.steps[0].run.append("--now")
    ledger.invariants.append("never touch more than 1 dbs concurrently")
    assert "--now" not in snap.runbook.steps[0].run and len(snap.invariants) == 2


def test_plain_keeps_the_order_targets_were_added_in() -> None:
    """New targets stand after the old ones in the order they were added (a set of changed
    names has no order of its own: twenty of them would come out shuffled)."""
    shared = {f"db-{i}": Target(state="done") for i in range(3)}
    cow = CowTargets(shared)
    cow["db-1"].state = "queued"
    added = [f"new-{i:02d}" for i in range(20)]
    for name in added:
        cow[name] = Target(state="queued")
    plain = cow.plain()
    assert list(plain) == [*shared, *added]
    assert plain["db-1"].state == "queued" and shared["db-1"].state == "done"
    assert plain["db-0"] is shared["db-0"]  # untouched targets are the readers' own objects, not copies
