"""Copy-on-write targets for a transaction on a ledger the engine wrote itself.

A transaction usually changes one or two targets of thousands. Instead of validating a
private copy of every target (and dumping every one back), the transaction gets the
readers' validated targets behind a dict that deep-copies a target the first time it is
reached; only those copies are checked and dumped again. Readers' objects are never
changed. Reaching every target (`items()`, `values()`) is still correct, just no faster.
"""

from __future__ import annotations

from typing import Any, Iterator

from engine.model import Ledger, Target


class CowTargets(dict):
    """name -> Target, copying a shared target on first access."""

    def __init__(self, shared: dict[str, Target]) -> None:
        super().__init__(shared)
        self.changed: set[str] = set()
        self.removed: set[str] = set()

    def __getitem__(self, name: str) -> Target:
        value = super().__getitem__(name)
        if name not in self.changed:
            value = value.model_copy(deep=True)
            super().__setitem__(name, value)
            self.changed.add(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __setitem__(self, name: str, value: Target) -> None:
        super().__setitem__(name, value)
        self.changed.add(name)
        self.removed.discard(name)

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self.changed.discard(name)
        self.removed.add(name)

    def pop(self, name: str, *default: Any) -> Any:
        if name in self:
            value = self[name]
            del self[name]
            return value
        if default:
            return default[0]
        raise KeyError(name)

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

    def plain(self) -> dict[str, Target]:
        """A plain dict of what is there now (copies and untouched shared targets)."""
        return dict(super().items())

    def __iter__(self) -> Iterator[str]:
        return super().__iter__()


def cow_ledger(shared: Ledger) -> Ledger:
    """A ledger for a transaction: top level deep-copied, targets copy-on-write."""
    # Shallow first (so the deep copy does not walk 10,000 targets), then deep.
    ledger = shared.model_copy(update={"targets": {}}).model_copy(deep=True)
    ledger.targets = CowTargets(shared.targets)
    return ledger
