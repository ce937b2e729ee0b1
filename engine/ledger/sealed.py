"""What is derived from a readers' snapshot of targets, kept while the snapshot lives.

A readers' snapshot never changes (engine.store.file: readers share one validated Ledger
per content; a transaction works on a copy-on-write view of it), so what is derived
from its targets may be worked out once and asked again for free:

- `names(targets, key, test)`: the names whose target passes `test`, in ledger order
  (the touched set: engine.ledger.touched);
- `start(targets, key)`: how many targets at the head of the ledger fail the test `key` names
  (or fewer), so a walk for the first one that passes can skip them (the autopilot's
  proposals: engine.planners.autopilot); the walk says what it found with `found_at`.

`key` names the test and the rules it depends on (the runbook's states, say): the same
key must always mean the same test. The store seals each snapshot it shares; a write's
new snapshot carries both forward from the one it was written on, looking again only at
the targets the write changed (`seal(new, cow)`): a session step at 10,000 targets never
walks them all. A transaction's copy-on-write targets get the same answers, worked out
from its base the same way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from engine.store.cow import CowTargets

Test = Callable[[Any], bool]

_MAX = 4  # the snapshot now, the one before, a transaction's base: a few suffice


class _Entry:
    __slots__ = ("targets", "names", "starts", "positions")

    def __init__(self, targets: dict) -> None:
        self.targets = targets  # held, so the id stays this dict's
        self.names: dict[Any, tuple[list[str], Test]] = {}
        self.starts: dict[Any, tuple[int, Test]] = {}
        self.positions: dict[str, int] | None = None  # name -> index in ledger order, made when first needed


_SEALED: OrderedDict[int, _Entry] = OrderedDict()
_REGISTRY = threading.Lock()


def _entry(targets: Any) -> _Entry | None:
    entry = _SEALED.get(id(targets))
    return entry if entry is not None and entry.targets is targets else None


def _positions(entry: _Entry) -> dict[str, int]:
    if entry.positions is None:
        entry.positions = {name: i for i, name in enumerate(entry.targets)}
    return entry.positions


def seal(targets: dict, derived: dict | None = None) -> None:
    """Mark a readers' snapshot of targets: it is never changed again. Only the store calls
    this, on what it shares. `derived`: the transaction's copy-on-write targets it was
    written from; what was known of their base is carried forward."""
    entry = _sealed(targets)
    if not isinstance(derived, CowTargets):
        return
    base = _entry(derived.shared)
    if base is None:
        return
    # Copies of the items: another thread (a session's main loop walking this base) may add to them meanwhile.
    for key, (names, test) in list(base.names.items()):
        carried = _carried(base, names, derived, test)
        if carried is not None:
            entry.names.setdefault(key, (carried, test))
    if not derived.reordered() and len(derived) == len(base.targets):  # the same names, in the same order
        for key, (at, test) in list(base.starts.items()):
            entry.starts.setdefault(key, (_moved_start(base, at, derived, test), test))
        entry.positions = entry.positions or base.positions


def _sealed(targets: dict) -> _Entry:
    """The entry of `targets`, made now if it has none (the oldest entries make room)."""
    with _REGISTRY:  # a session's threads seal at once: no entry is moved after another thread dropped it
        entry = _entry(targets)
        if entry is None:
            entry = _SEALED[id(targets)] = _Entry(targets)
            while len(_SEALED) > _MAX:
                _SEALED.popitem(last=False)
        else:
            _SEALED.move_to_end(id(targets))
        return entry


def _carried(base: _Entry, names: list[str], targets: CowTargets, test: Test) -> list[str] | None:
    """The base's `names`, with the targets `targets` changed or removed looked at again;
    None when the base's order is no longer the targets' (a target added, or one removed
    and put back, which moves it last in the transaction's dict: CowTargets.plain; the
    write then keeps the file's order, engine.store.file.as_written)."""
    if targets.reordered() or not all(n in base.targets for n in targets.changed):
        return None
    gone = targets.changed | targets.removed
    mine = {n for n in targets.changed if test(dict.__getitem__(targets, n))}
    if mine.issubset(names):
        return [n for n in names if n in mine or n not in gone]
    # A target that newly passes goes where the base's order puts it.
    return sorted([n for n in names if n not in gone] + list(mine), key=_positions(base).__getitem__)


def _moved_start(base: _Entry, at: int, targets: CowTargets, test: Test) -> int:
    """Where a walk over the changed targets may start: no later than any changed target that passes."""
    positions = _positions(base)
    for name in targets.changed:
        if test(dict.__getitem__(targets, name)):
            at = min(at, positions[name])
    return at


def names(targets: dict, key: Any, test: Test) -> list[str] | None:
    """The names whose target passes `test`, in ledger order, when `targets` is a sealed
    snapshot or a transaction's copy-on-write targets over one (None otherwise: look)."""
    if isinstance(targets, CowTargets):
        base = _sealed(targets.shared)  # what a transaction reads from is shared by definition
        return _carried(base, _names_of(base, key, test), targets, test)
    entry = _entry(targets)
    return list(_names_of(entry, key, test)) if entry is not None else None


def _names_of(entry: _Entry, key: Any, test: Test) -> list[str]:
    found = entry.names.get(key)
    if found is None:
        found = entry.names[key] = ([name for name, t in dict.items(entry.targets) if test(t)], test)
    return found[0]


def start(targets: dict, key: Any) -> int:
    """How many targets at the head of `targets` (a sealed snapshot) may be skipped by a walk
    for the first that passes the test `key` names: none of them passes. 0 when nothing is known."""
    entry = _entry(targets)
    if entry is None:
        return 0
    known = entry.starts.get(key)
    return known[0] if known is not None else 0


def found_at(targets: dict, key: Any, test: Test, index: int) -> None:
    """A walk found the first target passing `test` at `index` (or none: `index` is the
    count of targets): remembered for the sealed snapshot `targets`."""
    entry = _entry(targets)
    if entry is not None:
        known = entry.starts.get(key)
        if known is None or known[0] < index:
            entry.starts[key] = (index, test)
