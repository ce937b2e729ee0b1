"""What every ledger store offers (file today; PostgreSQL behind the same interface).

A store hands out fresh `Ledger` objects, applies changes as read-modify-write
transactions (a function applied to the freshest ledger, re-applied if the ledger
changed underneath), and watches for changes made by anyone else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from engine.errors import LedgerInvalid

if TYPE_CHECKING:  # annotations only: `engine.store.atomic` (the hook's heartbeat) must not load the model
    from engine.ledger.model import Ledger

T = TypeVar("T")


@dataclass
class Snapshot:
    """One reading of the ledger: the model plus what the store noticed about it."""

    ledger: Ledger
    digest: str
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # targets the engine last wrote that are gone
    rollback: list[str] = field(default_factory=list)  # how the file went back in time (sentences)
    external_edit: bool = False


@dataclass
class Change:
    """What a transaction did: the new revision and the journal records it produced."""

    revision: int
    records: list[dict[str, Any]] = field(default_factory=list)


WatchEvent = Snapshot | LedgerInvalid


class Store(Protocol):
    """The interface the rest of the engine uses; never the file system directly."""

    location: str
    read_only: bool

    def snapshot(self) -> Snapshot: ...

    def read(self) -> Ledger: ...

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False, accept_rollback: bool = False) -> tuple[T, int]: ...

    def fence(self, check: Callable[[Ledger], None], spawn: Callable[[], T], record: Callable[[Ledger, T], None]) -> tuple[T, Exception | None]: ...

    def watch(self, stop_event: Any = None) -> AsyncIterator[WatchEvent]: ...

    def open_journal(self, *, read_only: bool = False) -> Any: ...

    def heartbeat(self) -> Any: ...
