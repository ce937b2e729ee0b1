"""The PostgreSQL store: the same ledger, shared by teams on several hosts.

Location: `postgresql://host[:port]/dbname#LEDGER` (the fragment names the ledger; the
rest is a libpq URL). The ledger row holds the canonical YAML text, so export is the
file byte for byte and import is a parse: the ledger stays diffable in git.
- transact: `SELECT ... FOR UPDATE` serialises writers; the UPDATE also checks the
  revision (compare-and-swap) so a writer that skipped the lock cannot be overwritten.
- watch: LISTEN/NOTIFY on `handoff_ledger`, payload = ledger name.
- journal: the `handoff_journal` table, same records as the file journal.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from contextlib import contextmanager
from typing import Any, AsyncIterator, Callable, Iterator, TypeVar
from urllib.parse import urldefrag

from engine.codec import parse_document, splice
from engine.errors import LedgerInvalid, ReadOnly, Refused
from engine.model import Ledger
from engine.store.base import Snapshot, WatchEvent
from engine.store.convert import change, to_ledger
from engine.store.cow import cow_ledger
from engine.store.file import digest
from engine.store.filelock import LockTimeout, lock_timeout
from engine.journal import JournalBase, make_record
from engine.lease import beat_record

T = TypeVar("T")
CHANNEL = "handoff_ledger"
SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_ledger (
    name text PRIMARY KEY,
    revision bigint NOT NULL,
    body text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS handoff_journal (
    seq bigserial PRIMARY KEY,
    ledger text NOT NULL,
    record jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS handoff_journal_ledger ON handoff_journal (ledger, seq);
CREATE TABLE IF NOT EXISTS handoff_heartbeat (
    ledger text PRIMARY KEY,
    record jsonb NOT NULL
);
-- When the database received the beat: ages are measured on the database's clock.
ALTER TABLE handoff_heartbeat ADD COLUMN IF NOT EXISTS beat_at timestamptz NOT NULL DEFAULT now();
"""


_LOCK_CLASS = 0x68616E64  # "hand": the first key of every ledger's advisory lock


def _app_name() -> str:
    """Who we are, for a writer that waits on our lock (pg_stat_activity.application_name)."""
    command = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:2]])
    return f"handoff pid {os.getpid()} on {socket.gethostname()} ({command})"[:63]


def redact_url(url: str) -> str:
    """A libpq URL without its password, for messages."""
    import re

    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def split_location(location: str) -> tuple[str, str]:
    """(libpq URL, ledger name) from `postgresql://.../db#name`."""
    url, name = urldefrag(location)
    return url, name or "default"


def _connect(url: str, **kw):
    import psycopg

    try:
        return psycopg.connect(url, **kw)
    except psycopg.OperationalError as err:
        raise LedgerInvalid(f"cannot reach PostgreSQL: {str(err).strip().splitlines()[0]}", path=url) from None


def ensure_schema(url: str) -> None:
    with _connect(url, autocommit=True) as conn:
        conn.execute(SCHEMA)


class PostgresStore:
    """A ledger in a PostgreSQL row."""

    def __init__(self, location: str, *, read_only: bool = False) -> None:
        self.location = location
        self.url, self.name = split_location(location)
        self.path = location
        self.read_only = read_only
        self.on_lock_wait: Callable[[str], bool] | None = None  # holder text -> keep waiting?
        self._cache: tuple[str, Any, Ledger | None] | None = None

    def _row(self, conn, *, lock: bool = False) -> tuple[int, str]:
        from psycopg.errors import UndefinedTable

        sql = "SELECT revision, body FROM handoff_ledger WHERE name = %s" + (" FOR UPDATE" if lock else "")
        try:
            row = conn.execute(sql, (self.name,)).fetchone()
        except UndefinedTable:
            raise LedgerInvalid(f"no handoff tables in this database; import a ledger first with `handoff import FILE {self.location}`", path=self.location) from None
        if row is None:
            raise LedgerInvalid(f"no ledger named {self.name!r} here; import one with `handoff import FILE {self.location}`", path=self.location)
        return row[0], row[1]

    def _parse(self, body: str, *, fresh: bool = False) -> tuple[Snapshot, Any]:
        key = digest(body.encode("utf-8"))
        if self._cache and self._cache[0] == key and not fresh:
            parsed, ledger = self._cache[1], self._cache[2]
        else:
            parsed = parse_document(body, self.location)
            ledger = None
        if ledger is None or fresh:
            ledger = to_ledger(parsed.data, self.location, body)
            if not fresh:
                self._cache = (key, parsed, ledger)
        return Snapshot(ledger, key), parsed

    def snapshot(self) -> Snapshot:
        with _connect(self.url) as conn:
            _, body = self._row(conn)
        return self._parse(body)[0]

    def read(self) -> Ledger:
        return self.snapshot().ledger

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False, accept_rollback: bool = False) -> tuple[T, int]:
        """Apply `fn` to the ledger row under the writers' lock (see `_locked`)."""
        if self.read_only:
            raise ReadOnly("this view is read-only; nothing can be changed from it")
        with self._locked() as conn:
            return self._apply(conn, fn)

    def fence(self, check: Callable[[Ledger], None], spawn: Callable[[], T], record: Callable[[Ledger, T], None]) -> tuple[T, Exception | None]:
        """Spawn only while the caller provably still holds the ledger (FileStore.fence):
        check, spawn and record happen in one database transaction holding the lock."""
        spawned: list[T] = []
        try:
            with self._locked() as conn:
                _, body = self._row(conn, lock=True)
                check(self._parse(body, fresh=True)[0].ledger)
                spawned.append(spawn())
                self._apply(conn, lambda ledger: record(ledger, spawned[0]))
        except Exception as err:  # noqa: BLE001 - once spawned, a failed record is reported, never fatal to the process
            if not spawned:
                raise
            return spawned[0], err
        return spawned[0], None

    @contextmanager
    def _locked(self) -> Iterator[Any]:
        """A transaction holding this ledger's advisory lock. A wait longer than
        HANDOFF_LOCK_TIMEOUT names the holder (its application_name says who it is)."""
        from psycopg.errors import LockNotAvailable

        timeout_ms = int(lock_timeout() * 1000)
        while True:
            with _connect(self.url, application_name=_app_name()) as conn:
                locked = False
                try:
                    with conn.transaction():
                        conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{timeout_ms}ms",))
                        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_CLASS, self.name))
                        conn.execute("SELECT set_config('lock_timeout', '0', true)")
                        locked = True
                        yield conn
                        return
                except LockNotAvailable:
                    if locked:
                        raise
                    who = self._lock_holder()
                if self.on_lock_wait is not None and self.on_lock_wait(who):
                    continue
                raise LockTimeout(f"the ledger {self.name!r} has been locked for more than {lock_timeout():g}s by {who}; "
                                  "nothing was changed. If that process is stuck, end it; then try again")

    def _lock_holder(self) -> str:
        try:
            with _connect(self.url) as conn:
                row = conn.execute(
                    "SELECT a.application_name, a.client_addr, a.xact_start FROM pg_locks l JOIN pg_stat_activity a "
                    "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::oid "
                    "AND l.objid = (hashtext(%s)::bigint & 4294967295)::oid AND l.objsubid = 2",
                    (_LOCK_CLASS, self.name),
                ).fetchone()
        except Exception:  # noqa: BLE001 - naming the holder is a courtesy; the timeout stands
            return "another connection"
        if row is None:
            return "another connection (it has just let go)"
        name, addr, since = row
        return f"{name or 'a client'}" + (f" from {addr}" if addr else "") + (f" since {since:%Y-%m-%dT%H:%M:%SZ}" if since else "")

    def _apply(self, conn, fn: Callable[[Ledger], T]) -> tuple[T, int]:
        revision, body = self._row(conn, lock=True)
        snap, parsed = self._parse(body, fresh=True)
        ledger = cow_ledger(snap.ledger)
        result = fn(ledger)
        ledger.revision = max(ledger.revision, revision) + 1
        targets = ledger.targets
        try:
            ledger.targets = targets.plain()
            ledger.check_states(targets.changed)
            text = splice(parsed, change(snap.ledger, ledger, targets.changed | targets.removed)).text
        except ValueError as err:  # an unknown state, text YAML cannot hold, a failed read-back
            raise Refused(str(err), title="Cannot write that") from None
        updated = conn.execute(
            "UPDATE handoff_ledger SET revision = %s, body = %s, updated_at = now() WHERE name = %s AND revision = %s",
            (ledger.revision, text, self.name, revision),
        ).rowcount
        if updated != 1:
            raise Refused("the ledger changed underneath (revision moved); try again", title="Changed underneath")
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))
        return result, ledger.revision

    def import_text(self, text: str, *, replace: bool = False) -> int:
        """Create the ledger from YAML text (validated first). Over an existing ledger only
        with `replace`, never while a live holder has its lease, and the revision never
        goes backwards (the imported text gets one above the stored one)."""
        from engine.lease import lease_state

        parsed = parse_document(text, self.location)
        ledger = to_ledger(parsed.data, self.location, text)
        ensure_schema(self.url)
        with self._locked() as conn:
            row = conn.execute("SELECT revision, body FROM handoff_ledger WHERE name = %s FOR UPDATE", (self.name,)).fetchone()
            if row is not None:
                if not replace:
                    raise Refused(f"a ledger named {self.name!r} already exists at {redact_url(self.url)} (revision {row[0]}); "
                                  "nothing was changed. Export it first, then import with --replace if you mean to replace it",
                                  title="Ledger exists")
                current = self._parse(row[1], fresh=True)[0].ledger
                state = lease_state(current.session, self.heartbeat().current())
                if state.status == "live":
                    raise Refused(f"{state.detail} holds this ledger; stop it (`handoff stop {self.location}`) before "
                                  "replacing the ledger under it. Nothing was changed", title="Ledger in use")
                if ledger.revision <= row[0]:
                    bumped = ledger.model_copy()
                    bumped.revision = row[0] + 1
                    text = splice(parsed, change(ledger, bumped, set())).text
                    ledger = bumped
            conn.execute(
                "INSERT INTO handoff_ledger (name, revision, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET revision = EXCLUDED.revision, body = EXCLUDED.body, updated_at = now()",
                (self.name, ledger.revision, text),
            )
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))
        return ledger.revision

    def export_text(self) -> str:
        with _connect(self.url) as conn:
            return self._row(conn)[1]

    def heartbeat(self) -> "PgHeartbeat":
        return PgHeartbeat(self.url, self.name)

    def open_journal(self, *, read_only: bool = False) -> "PgJournal":
        return PgJournal(self.url, self.name, read_only=read_only)

    async def watch(self, stop_event: asyncio.Event | None = None, debounce_ms: int = 50) -> AsyncIterator[WatchEvent]:
        import psycopg

        last = None
        try:
            last = self.snapshot().digest
        except LedgerInvalid:
            pass
        conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            while not (stop_event and stop_event.is_set()):
                names = [n.payload async for n in conn.notifies(timeout=0.5)]
                if self.name not in names:
                    continue
                await asyncio.sleep(debounce_ms / 1000)
                try:
                    snap = await asyncio.to_thread(self.snapshot)
                except LedgerInvalid as err:
                    yield err
                    continue
                if snap.digest != last:
                    last = snap.digest
                    yield snap
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

    def write(self, holder: str, **state: Any) -> None:
        """Record a beat; the database stamps it with its own `now()`. Raises OSError."""
        import psycopg

        record = beat_record(holder, **state)
        try:
            with _connect(self.url, autocommit=True) as conn:
                if not self._ready:  # a ledger imported before this table existed
                    conn.execute(SCHEMA)
                    self._ready = True
                conn.execute(
                    "INSERT INTO handoff_heartbeat (ledger, record, beat_at) VALUES (%s, %s::jsonb, now()) "
                    "ON CONFLICT (ledger) DO UPDATE SET record = EXCLUDED.record, beat_at = now()",
                    (self.ledger, json.dumps(record)),
                )
        except (LedgerInvalid, psycopg.Error) as err:  # the beat thread counts any failure as silence
            raise OSError(str(err)) from None

    def remove(self) -> None:
        import psycopg

        try:
            with _connect(self.url, autocommit=True) as conn:
                conn.execute("DELETE FROM handoff_heartbeat WHERE ledger = %s", (self.ledger,))
        except (LedgerInvalid, psycopg.Error):
            pass  # a leftover heartbeat of a released lease proves nothing (lease_state ignores it)

    def current(self) -> dict[str, Any] | None:
        """The beat with its `age` on the database's clock, or None."""
        import psycopg

        try:
            with _connect(self.url) as conn:
                row = conn.execute(
                    "SELECT record, extract(epoch from now() - beat_at) FROM handoff_heartbeat WHERE ledger = %s",
                    (self.ledger,),
                ).fetchone()
        except (LedgerInvalid, psycopg.Error):
            return None  # no readable heartbeat is no proof of life
        if not row:
            return None
        beat = dict(row[0])
        beat["age"] = max(0.0, float(row[1]))
        return beat


class PgJournal(JournalBase):
    """The journal in a table; `seq` is the row id, used as the read offset."""

    def __init__(self, url: str, ledger: str, *, read_only: bool = False, redact: list[str] | None = None) -> None:
        super().__init__(f"{url}#{ledger} (handoff_journal)", redact=redact, read_only=read_only)
        self.url = url
        self.ledger = ledger

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None, **fields: Any) -> dict[str, Any]:
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields)
        if self.read_only:
            return record
        with _connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO handoff_journal (ledger, record) VALUES (%s, %s::jsonb) RETURNING seq",
                (self.ledger, json.dumps(record, ensure_ascii=False)),
            ).fetchone()
        record["seq"] = row[0]
        return record

    def _select(self, where: str, params: tuple, order: str = "ASC", limit: int | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT seq, record FROM handoff_journal WHERE ledger = %s {where} ORDER BY seq {order}"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with _connect(self.url) as conn:
            rows = conn.execute(sql, (self.ledger, *params)).fetchall()
        out = []
        for seq, record in rows:
            record = dict(record)
            record["seq"] = seq
            out.append(record)
        return out

    def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        records = self._select("AND seq > %s", (offset,))
        return records, (records[-1]["seq"] if records else offset)

    def tail(self, n: int = 200) -> list[dict[str, Any]]:
        return list(reversed(self._select("", (), "DESC", n)))

    def end_offset(self) -> int:
        tail = self.tail(1)
        return tail[-1]["seq"] if tail else 0

    def for_target(self, target: str, limit: int = 200) -> list[dict[str, Any]]:
        return list(reversed(self._select("AND record->>'target' = %s", (target,), "DESC", limit)))

    def last_of(self, kind: str, **match: Any) -> dict[str, Any] | None:
        rows = self._select("AND record->>'kind' = %s AND record @> %s::jsonb", (kind, json.dumps(match)), "DESC", 1)
        return rows[0] if rows else None
