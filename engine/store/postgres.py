"""The PostgreSQL store: the same ledger, shared by teams on several hosts.

Location: `postgresql://host[:port]/dbname#LEDGER` (the fragment names the ledger; the
rest is a libpq URL). The ledger row holds the canonical YAML text, so export is the
file byte for byte and import is a parse: the ledger stays diffable in git.
- transact: `SELECT ... FOR UPDATE` serialises writers; the UPDATE also checks the
  revision (compare-and-swap) so a writer that skipped the lock cannot be overwritten.
- watch: LISTEN/NOTIFY on `handoff_ledger`, payload = ledger name.
- journal: the `handoff_journal` table (engine.store.pg_journal).
- connections (engine.store.pg_conn): every driver error is one line in our words (the
  password masked). A refused connection fails at once; a running session sets
  `patience`, and a brief outage is then ridden out with backoff (the work is retried
  on a fresh connection) until it lasts longer than that, which is ServiceUnavailable
  (`handoff resume` exit 6). psycopg is the `postgres` extra: without it, a
  postgresql:// location says so.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, AsyncIterator, Callable, TypeVar

from engine.codec import emit_document, parse_document
from engine.errors import LedgerInvalid, ReadOnly, Refused
from engine.model import Ledger
from engine.store.base import Snapshot, WatchEvent
from engine.store.convert import to_data, to_ledger
from engine.store.file import digest
from engine.store.pg_conn import SCHEMA, Db, _connect, _first_line, driver, ensure_schema, outage_limit, shown, split_location
from engine.store.pg_journal import PgJournal

# Re-exported: the store's one import for what lives beside it.
__all__ = ["CHANNEL", "SCHEMA", "Db", "PgHeartbeat", "PgJournal", "PostgresStore", "driver", "outage_limit", "shown",
           "split_location"]

T = TypeVar("T")
CHANNEL = "handoff_ledger"


class PostgresStore:
    """A ledger in a PostgreSQL row."""

    def __init__(self, location: str, *, read_only: bool = False) -> None:
        self.location = location
        self.url, self.name = split_location(location)
        self.path = shown(location)
        self.read_only = read_only
        self.db = Db(self.url)
        self._cache: tuple[str, Any, Ledger | None] | None = None

    @property
    def patience(self) -> float:
        return self.db.patience

    @patience.setter
    def patience(self, seconds: float) -> None:
        """Ride out database outages this long (the journal shares the setting)."""
        self.db.patience = seconds

    def _row(self, conn, *, lock: bool = False) -> tuple[int, str]:
        from psycopg.errors import UndefinedTable

        sql = "SELECT revision, body FROM handoff_ledger WHERE name = %s" + (" FOR UPDATE" if lock else "")
        try:
            row = conn.execute(sql, (self.name,)).fetchone()
        except UndefinedTable:
            raise LedgerInvalid(f"no handoff tables in this database; import a ledger first with `handoff import FILE {self.path}`", path=self.path) from None
        if row is None:
            raise LedgerInvalid(f"no ledger named {self.name!r} here; import one with `handoff import FILE {self.path}`", path=self.path)
        return row[0], row[1]

    def _parse(self, body: str, *, fresh: bool = False) -> tuple[Snapshot, Any]:
        key = digest(body.encode("utf-8"))
        if self._cache and self._cache[0] == key and not fresh:
            parsed, ledger = self._cache[1], self._cache[2]
        else:
            parsed = parse_document(body, self.path)
            ledger = None
        if ledger is None or fresh:
            ledger = to_ledger(parsed.data, self.path, body)
            if not fresh:
                self._cache = (key, parsed, ledger)
        return Snapshot(ledger, key), parsed

    def snapshot(self) -> Snapshot:
        _, body = self.db.run(self._row)
        return self._parse(body)[0]

    def read(self) -> Ledger:
        return self.snapshot().ledger

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False) -> tuple[T, int]:
        if self.read_only:
            raise ReadOnly("this view is read-only; nothing can be changed from it")

        def work(conn):
            with conn.transaction():
                revision, body = self._row(conn, lock=True)
                snap, parsed = self._parse(body, fresh=True)
                ledger = snap.ledger
                result = fn(ledger)
                ledger.revision = max(ledger.revision, revision) + 1
                data = to_data(ledger)
                text, _ = emit_document(data, parsed.header, parsed.lines, parsed.data.get("targets"))
                updated = conn.execute(
                    "UPDATE handoff_ledger SET revision = %s, body = %s, updated_at = now() WHERE name = %s AND revision = %s",
                    (ledger.revision, text, self.name, revision),
                ).rowcount
                if updated != 1:
                    raise Refused("the ledger changed underneath (revision moved); try again", title="Changed underneath")
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))
            return result, ledger.revision

        return self.db.run(work)

    def import_text(self, text: str) -> int:
        """Create or replace the ledger from YAML text (validated first)."""
        parsed = parse_document(text, self.path)
        ledger = to_ledger(parsed.data, self.path, text)
        ensure_schema(self.db)

        def work(conn):
            with conn.transaction():
                conn.execute(
                    "INSERT INTO handoff_ledger (name, revision, body) VALUES (%s, %s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET revision = EXCLUDED.revision, body = EXCLUDED.body, updated_at = now()",
                    (self.name, ledger.revision, text),
                )
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))

        self.db.run(work)
        return ledger.revision

    def export_text(self) -> str:
        return self.db.run(self._row)[1]

    def heartbeat(self) -> "PgHeartbeat":
        return PgHeartbeat(self.url, self.name)

    def open_journal(self, *, read_only: bool = False) -> "PgJournal":
        return PgJournal(self.db, self.name, read_only=read_only)

    async def watch(self, stop_event: asyncio.Event | None = None, debounce_ms: int = 50) -> AsyncIterator[WatchEvent]:
        """Snapshots on NOTIFY. A lost connection is said once (as a LedgerInvalid, so the
        last good state stays on screen) and the watch reconnects with backoff."""
        psycopg = driver()
        last = None
        try:
            last = self.snapshot().digest
        except LedgerInvalid:
            pass
        pause = 0.5
        while not (stop_event and stop_event.is_set()):
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True, connect_timeout=10)
            except psycopg.OperationalError as err:
                yield LedgerInvalid(f"cannot reach PostgreSQL: {_first_line(err)}; retrying", path=self.path)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 10.0)
                continue
            try:
                await conn.execute(f"LISTEN {CHANNEL}")
                pause = 0.5
                names = [self.name]  # (re)connected: look once, something may have changed meanwhile
                while not (stop_event and stop_event.is_set()):
                    if self.name in names:
                        await asyncio.sleep(debounce_ms / 1000)
                        try:
                            snap = await asyncio.to_thread(self.snapshot)
                        except LedgerInvalid as err:
                            yield err
                        else:
                            if snap.digest != last:
                                last = snap.digest
                                yield snap
                    names = [n.payload async for n in conn.notifies(timeout=0.5)]
            except psycopg.OperationalError as err:
                yield LedgerInvalid(f"lost the connection to PostgreSQL: {_first_line(err)}; reconnecting", path=self.path)
            finally:
                await conn.close()


class PgHeartbeat:
    """The running session's heartbeat in `handoff_heartbeat` (one row per ledger), so a
    session on another host sees it: a file beside nothing would let it take over a
    live lease after the stale limit."""

    def __init__(self, url: str, ledger: str) -> None:
        self.url = url
        self.ledger = ledger
        self._ready = False

    def write(self, session_id: str, *, budget_used: float | None, phase: str, detail: str = "") -> None:
        import os
        import socket

        import psycopg

        record = {"session": session_id, "pid": os.getpid(), "host": socket.gethostname(), "at": time.time(),
                  "budget_used": budget_used, "phase": phase, "detail": detail}
        try:
            with _connect(self.url, autocommit=True) as conn:
                if not self._ready:  # a ledger imported before this table existed
                    conn.execute(SCHEMA)
                    self._ready = True
                conn.execute(
                    "INSERT INTO handoff_heartbeat (ledger, record) VALUES (%s, %s::jsonb) "
                    "ON CONFLICT (ledger) DO UPDATE SET record = EXCLUDED.record",
                    (self.ledger, json.dumps(record)),
                )
        except (LedgerInvalid, psycopg.Error) as err:  # the beat thread keeps OSErrors as its last error
            raise OSError(str(err)) from None

    def remove(self) -> None:
        import psycopg

        try:
            with _connect(self.url, autocommit=True) as conn:
                conn.execute("DELETE FROM handoff_heartbeat WHERE ledger = %s", (self.ledger,))
        except (LedgerInvalid, psycopg.Error):
            pass  # a leftover heartbeat of a released lease proves nothing (lease_state ignores it)

    def current(self) -> dict[str, Any] | None:
        import psycopg

        try:
            with _connect(self.url) as conn:
                row = conn.execute("SELECT record FROM handoff_heartbeat WHERE ledger = %s", (self.ledger,)).fetchone()
        except (LedgerInvalid, psycopg.Error):
            return None  # no readable heartbeat is no proof of life
        return dict(row[0]) if row else None
