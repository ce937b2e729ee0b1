"""What every ledger store offers (file today; PostgreSQL behind the same interface).

A store hands out fresh `Ledger` objects, applies changes as read-modify-write
transactions (a function applied to the freshest ledger, re-applied if the ledger
changed underneath), and watches for changes made by anyone else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from engine.errors import LedgerInvalid

if TYPE_CHECKING:  # annotations only: `engine.store.atomic` (the hook's heartbeat) must not load the model
    from engine.audit.redact import Redactor
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


class Proofs(Protocol):
    """Where the kernel's or the database's word that a user recorded an approval is kept
    (engine.approvals.attest.FileProofs, engine.store.pg_attest.PgProofs)."""

    def where(self, user: str) -> str: ...  # what `user` needs for a proof to be made

    def record(self, target: str, approval: Any) -> None: ...

    def problem(self, target: str, approval: Any) -> str | None: ...

    # The mark that refuses it (for the intent `token`: not that intent's own): ts, actor, token, witness.
    def spent(self, target: str, approval: Any, token: str | None = None) -> dict | None: ...

    def spend(self, target: str, approval: Any, token: str, user: str) -> str | None: ...  # why it may not be

    def withdraw_until(self, target: str, step: str, until: str) -> None: ...  # every approval of step given until then

    def withdrawn_until(self, target: str, step: str) -> tuple[str, str] | None: ...  # (until, witness) or None


class Journal(Protocol):
    """What every journal backend offers (engine.audit.journal.Journal for a file ledger,
    engine.store.pg_journal.PgJournal for PostgreSQL)."""

    path: str
    read_only: bool
    redactor: Redactor

    @property
    def warnings(self) -> list[str]: ...  # what reading skipped, each once

    def check_writable(self) -> None: ...

    def set_redact(self, patterns: list[str]) -> None: ...

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None,
               **fields: Any) -> dict[str, Any]: ...

    def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]: ...

    def end_offset(self) -> int: ...

    def tail(self, n: int = 200) -> list[dict[str, Any]]: ...

    def for_target(self, target: str, limit: int = 200) -> list[dict[str, Any]]: ...

    def last_of(self, kind: str, **match: Any) -> dict[str, Any] | None: ...

    def follow(self, offset: int | None = None, poll: float = 0.2) -> Iterator[dict[str, Any]]: ...

    def verify(self, head: dict[str, Any] | None = None) -> Any: ...

    def proofs(self) -> Proofs | None: ...


class Heartbeat(Protocol):
    """Where the lease holder's proof of life is kept (engine.lease.heartbeat.Heartbeat beside a
    file ledger, engine.store.postgres.PgHeartbeat in the database)."""

    def write(self, holder: str, **state: Any) -> None: ...

    def remove(self) -> None: ...

    def current(self) -> dict[str, Any] | None: ...


class Store(Protocol):
    """The interface the rest of the engine uses; never the file system directly."""

    location: str
    path: str  # what a person is shown: the file, or the database and the ledger's name
    read_only: bool
    saw_external_edit: bool  # did the last transaction start from a hand edit? (a file's, or a row changed in SQL)
    history_lost: str | None  # why the last write's history record is missing (file store; PostgreSQL's commits with it)
    unsettled: str | None  # why the last failed write may yet be in (PostgreSQL: its COMMIT's reply lost, unasked)
    journaled_external_edit: bool  # ... and did that transaction journal the edit itself?
    on_lock_wait: Callable[[str], bool] | None  # holder text -> keep waiting past the lock timeout?
    patience: float  # seconds a brief outage of the store's database is ridden out (a file store has none: 0)

    def snapshot(self) -> Snapshot: ...

    def read(self) -> Ledger: ...

    def read_file_alone(self) -> None: ...  # take nothing from the per-user parse cache (file store; PostgreSQL keeps none)

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False, accept_rollback: bool = False,
                 patient: bool = True) -> tuple[T, int]: ...  # patient=False: a database out of reach is not waited for

    def fence(self, check: Callable[[Ledger], None], spawn: Callable[[], T], *,
              first: Callable[[], None] | None = None) -> T: ...

    def watch(self, stop_event: Any = None) -> AsyncIterator[WatchEvent]: ...

    def open_journal(self, *, read_only: bool = False) -> Journal: ...

    def heartbeat(self) -> Heartbeat: ...

    def last_write(self) -> dict[str, Any] | None: ...  # the engine's record of its last write, if it keeps one

    def export_text(self) -> str | None: ...  # the ledger's text as stored; None: it is the file at `path`
