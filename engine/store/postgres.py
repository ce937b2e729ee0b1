"""The PostgreSQL store: the same ledger, shared by teams on several hosts.

Location: `postgresql://host[:port]/dbname#LEDGER` (the fragment names the ledger; the
rest is a libpq URL). The ledger row holds the canonical YAML text, so export is the
file byte for byte and import is a parse: the ledger stays diffable in git.
- transact: `SELECT ... FOR UPDATE` serialises writers; the UPDATE also checks the
  revision (compare-and-swap) so a writer that skipped the lock cannot be overwritten.
- watch: LISTEN/NOTIFY on `handoff_ledger`, payload = ledger name.
- journal: the `handoff_journal` table, same records as the file journal; an append
  takes a per-ledger advisory lock, so `seq` order is commit order (a reader reading
  `seq > offset` never skips a record committed late).
- errors: every driver error is one line in our words (the password masked). A refused
  connection fails at once; a running session sets `patience`, and a brief outage is
  then ridden out with backoff (the work is retried on a fresh connection) until it
  lasts longer than that, which is ServiceUnavailable (`handoff resume` exit 6).
- psycopg is the `postgres` extra: without it, a postgresql:// location says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any, AsyncIterator, Callable, TypeVar
from urllib.parse import urldefrag

from engine.codec import emit_document, parse_document
from engine.errors import HandoffError, LedgerInvalid, ReadOnly, Refused, ServiceUnavailable, UsageError
from engine.model import Ledger
from engine.store.base import Snapshot, WatchEvent
from engine.store.convert import to_data, to_ledger
from engine.store.file import digest
from engine.journal_base import JournalBase, JournalWriteError, gap_record, make_record
from engine.redact import redact

T = TypeVar("T")
CHANNEL = "handoff_ledger"
OUTAGE_ENV = "HANDOFF_DB_OUTAGE_SECONDS"
DEFAULT_OUTAGE = 60.0  # how long a running session rides out a database outage
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
"""


def split_location(location: str) -> tuple[str, str]:
    """(libpq URL, ledger name) from `postgresql://.../db#name`."""
    url, name = urldefrag(location)
    return url, name or "default"


def shown(location: str) -> str:
    """A location fit to print: a password in it is masked."""
    return redact(location)


def outage_limit() -> float:
    """Seconds a running session waits out a database outage (HANDOFF_DB_OUTAGE_SECONDS)."""
    try:
        return max(0.0, float(os.environ.get(OUTAGE_ENV, DEFAULT_OUTAGE)))
    except ValueError:
        return DEFAULT_OUTAGE


def driver():
    """The psycopg module, or a one-line error naming the extra to install."""
    try:
        import psycopg
    except ImportError:
        raise UsageError("a postgresql:// ledger needs the PostgreSQL driver: "
                         "pip install 'handoff-tui[postgres]' (the `postgres` extra)") from None
    return psycopg


class DatabaseError(HandoffError):
    """PostgreSQL refused what the engine asked (privileges, a broken schema)."""

    title = "PostgreSQL error"
    exit_code = 2


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return redact(lines[0] if lines else type(err).__name__)


_HINTS = {
    "42501": "; grant this role SELECT, INSERT, UPDATE and DELETE on the handoff_* tables",  # insufficient_privilege
    "25006": "; this server is read-only (a standby?): use the primary",  # read_only_sql_transaction
}


class Db:
    """Connections to one database. `patience` > 0 (a running session) rides out an
    outage: the work is retried on a new connection with backoff for that long. Once
    one call has given up, the next ones fail at once until a connection works again
    (a session ending for the outage must not wait it out once per journal line)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = shown(url)
        self.patience = 0.0
        self.gave_up = False

    def run(self, work: Callable[[Any], T], *, autocommit: bool = False) -> T:
        """`work(conn)` in one connection (committed when it returns); errors in our words."""
        psycopg = driver()
        deadline: float | None = None
        pause = 0.25
        while True:
            try:
                with psycopg.connect(self.url, autocommit=autocommit, connect_timeout=10) as conn:
                    self.gave_up = False
                    return work(conn)
            except psycopg.OperationalError as err:  # refused, dropped, the server going away
                if self.patience <= 0:
                    raise LedgerInvalid(f"cannot reach PostgreSQL: {_first_line(err)}", path=self.shown) from None
                now = time.monotonic()
                deadline = deadline or now + self.patience
                if self.gave_up or now + pause > deadline:
                    self.gave_up = True
                    raise ServiceUnavailable(f"PostgreSQL at {self.shown} stayed unreachable for {self.patience:g}s "
                                             f"({_first_line(err)})") from None
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
            except psycopg.Error as err:
                hint = _HINTS.get(getattr(err, "sqlstate", None) or "", "")
                raise DatabaseError(f"PostgreSQL refused it: {_first_line(err)}{hint}", path=self.shown) from None


def _connect(url: str, **kw):
    psycopg = driver()
    try:
        return psycopg.connect(url, connect_timeout=10, **kw)
    except psycopg.OperationalError as err:
        raise LedgerInvalid(f"cannot reach PostgreSQL: {_first_line(err)}", path=shown(url)) from None


def ensure_schema(db: Db) -> None:
    db.run(lambda conn: conn.execute(SCHEMA), autocommit=True)


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


class PgJournal(JournalBase):
    """The journal in a table; `seq` is the row id, used as the read offset."""

    def __init__(self, db: Db, ledger: str, *, read_only: bool = False, redact: list[str] | None = None) -> None:
        super().__init__(f"{db.shown}#{ledger} (handoff_journal)", redact=redact, read_only=read_only)
        self.db = db
        self.ledger = ledger
        self._gaps: list[dict[str, Any]] = []  # records lost while the database was away

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None, **fields: Any) -> dict[str, Any]:
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields)
        if self.read_only:
            return record
        rows = []
        for gap in self._gaps:
            gap_kind, gap_msg, gap_fields = gap_record(gap)
            gap_rev, gap_target = gap_fields.pop("rev"), gap_fields.pop("target")
            rows.append(make_record(self.redactor, gap_kind, gap_msg, actor=actor, rev=gap_rev, target=gap_target, fields=gap_fields))
        rows.append(record)

        def work(conn):
            # One writer per ledger at a time: seq order is commit order.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('handoff_journal'), hashtext(%s))", (self.ledger,))
            seqs = [conn.execute("INSERT INTO handoff_journal (ledger, record) VALUES (%s, %s::jsonb) RETURNING seq",
                                 (self.ledger, json.dumps(row, ensure_ascii=False))).fetchone()[0] for row in rows]
            return seqs[-1]

        try:
            record["seq"] = self.db.run(work)
        except HandoffError as err:
            if rev is not None:
                self._gaps.append({"rev": rev, "kind": kind, "target": target, "msg": str(record.get("msg"))[:200], "error": str(err)})
            raise JournalWriteError(f"{self.path}: the journal record could not be written: {err}", rev=rev, reason=str(err)) from None
        self._gaps.clear()
        return record

    def _select(self, where: str, params: tuple, order: str = "ASC", limit: int | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT seq, record FROM handoff_journal WHERE ledger = %s {where} ORDER BY seq {order}"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self.db.run(lambda conn: conn.execute(sql, (self.ledger, *params)).fetchall())
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
