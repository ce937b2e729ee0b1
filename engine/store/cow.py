"""Copy-on-write targets for a transaction: a target is copied only when it is changed.

A transaction usually changes one or two targets of thousands, yet reads many (the
touched-target limit, the handoff note's counts). The transaction gets the readers'
validated targets behind a dict that hands out read-through views (engine.store.cow_views):
reading costs no copy, and the first change made through a view, at any depth, copies
that one target into the transaction first. Only the names in `changed | removed` are
checked and dumped again; the readers' objects are never changed.

`shared_items()` gives the underlying objects without views, for code that provably
only reads (counts, the touched set): the caller promises not to change them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from engine.ledger.model import Ledger, Target
from engine.store.cow_views import ModelView, Root, unwrap


class CowTargets(dict):
    """name -> Target: a view of the shared target until it changes, then its own copy."""

    def __init__(self, shared: dict[str, Target]) -> None:
        super().__init__(shared)
        self.shared = shared
        self.changed: set[str] = set()
        self.removed: set[str] = set()
        self._deleted = False  # a name was ever deleted: put back, it stands last (see plain)
        self._roots: dict[str, Root] = {}

    def _adopt(self, name: str, value: Target) -> None:
        """A view's first change: its copy takes the shared object's place."""
        super().__setitem__(name, value)
        self.changed.add(name)

    def _detach(self, name: str) -> None:
        root = self._roots.pop(name, None)
        if root is not None:
            root.detached = True  # an old view of a replaced target changes only itself

    def __getitem__(self, name: str) -> Target:
        value = super().__getitem__(name)
        root = self._roots.get(name)
        if root is None:
            root = self._roots[name] = Root(self, name, value)
            if name in self.changed:  # the transaction's own object (a new target): no copy to make
                root.copy = value
        # A view even of its own copy: whatever is stored through it is unwrapped first,
        # so no view (and no object of another target) ends up inside a target.
        return ModelView(root, root.copy or value, root.copy is None)  # type: ignore[return-value]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __setitem__(self, name: str, value: Target) -> None:
        value = unwrap(value)
        self._detach(name)
        super().__setitem__(name, value)
        self.changed.add(name)
        self.removed.discard(name)

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self._deleted = True
        self._detach(name)
        self.changed.discard(name)
        self.removed.add(name)

    def pop(self, name: str, *default: Any) -> Any:
        if name in self:
            value = super().__getitem__(name)
            del self[name]
            return value if name in self.changed else copy.deepcopy(value)  # never the shared object
        if default:
            return default[0]
        raise KeyError(name)

    def popitem(self) -> tuple[str, Target]:
        name = next(reversed(list(super().__iter__())))
        return name, self.pop(name)

    def clear(self) -> None:
        for name in list(super().__iter__()):
            del self[name]

    def values(self) -> list[Target]:  # type: ignore[override]
        return [self[name] for name in self]

    def items(self) -> list[tuple[str, Target]]:  # type: ignore[override]
        return [(name, self[name]) for name in self]

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name not in self:
            self[name] = default
        return self[name]

    def update(self, *args: Any, **kw: Any) -> None:
        for name, value in dict(*args, **kw).items():
            self[name] = value

    def copy(self) -> dict[str, Target]:
        return dict(self.items())

    # `|=` keeps a CowTargets, as dict's own does (typeshed: Self), while `|` gives a plain dict;
    # mypy wants the two to agree.
    def __ior__(self, other: Any) -> CowTargets:  # type: ignore[misc]
        self.update(other)
        return self

    def reordered(self) -> bool:
        """Whether a name was ever deleted here: put back, it stands last, out of the shared order."""
        return self._deleted

    def plain(self) -> dict[str, Target]:
        """A plain dict of what is there now (copies and untouched shared targets). When the
        transaction only changed targets in place (a step's usual write), that is the shared
        dict copied whole, at C speed, with the copies put in: same names, same order. A
        target added or removed (or removed and put back, which moves it last) takes the
        pair-by-pair copy, which keeps this dict's order."""
        if not self._deleted and type(self.shared) is dict and len(self) == len(self.shared):  # nothing added either
            out = self.shared.copy()  # an exact dict: no views are made, nothing is deep-copied
            for name in self.changed:
                out[name] = dict.__getitem__(self, name)
            return out
        return dict(super().items())

    def __iter__(self) -> Iterator[str]:
        return super().__iter__()


def written(targets: dict[str, Target]) -> tuple[dict[str, Target], set[str] | None]:
    """What a transaction leaves as the ledger's targets, as plain objects, and the names it
    may have changed (None: any). A transaction that gave `ledger.targets` a dict of its own
    (the targets it was handed, reordered or copied) holds views of the readers' objects in
    it: each becomes a private copy, never kept as a view."""
    if isinstance(targets, CowTargets):
        return targets.plain(), targets.changed | targets.removed
    return {name: unwrap(target) for name, target in targets.items()}, None


def shared_items(targets: dict[str, Target]):
    """(name, target) pairs without views or copies, for code that only reads them."""
    return dict.items(targets)


def shared_values(targets: dict[str, Target]):
    """The targets without views or copies, for code that only reads them."""
    return dict.values(targets)


def cow_ledger(shared: Ledger) -> Ledger:
    """A ledger for a transaction: top level deep-copied, targets copy-on-write."""
    # Shallow first (so the deep copy does not walk 10,000 targets), then deep.
    ledger = shared.model_copy(update={"targets": {}}).model_copy(deep=True)
    ledger.targets = CowTargets(shared.targets)
    return ledger
