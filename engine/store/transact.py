"""One change through a store, or none: `apply(store, fn)`, where `fn` may raise NoChange."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.ledger.model import Ledger


class NoChange(Exception):
    """Raised inside a transaction to write nothing; carries what to return instead."""

    def __init__(self, value: Any = None) -> None:
        super().__init__("no change")
        self.value = value


def apply(store, fn: Callable[[Ledger], Any], lock=None, *, patient: bool = True) -> tuple[Any, int | None]:
    """`store.transact(fn)`, where `fn` may raise NoChange to write nothing (revision None).
    `patient=False`: a database that cannot be reached is not waited for (Store.transact)."""
    try:
        if lock is None:
            return store.transact(fn, patient=patient)
        with lock:
            return store.transact(fn, patient=patient)
    except NoChange as stop:
        return stop.value, None
