"""The PostgreSQL store: the same ledger, shared by teams on several hosts.

Location: `postgresql://host[:port]/dbname#LEDGER` (the fragment names the ledger; the
rest is a libpq URL). The ledger row holds the canonical YAML text, so export is the
file byte for byte and import is a parse: the ledger stays diffable in git.
- transact: a per-ledger advisory lock serialises writers (a wait longer than
  HANDOFF_LOCK_TIMEOUT names the holder, from its application_name); `SELECT ... FOR
  UPDATE` and a revision compare-and-swap guard the row besides. A change is spliced
  into the stored text: only what changed is written again. `fence` spawns a step's
  process inside such a transaction, after re-reading the lease and the intent.
- import: never over an existing ledger unless `--replace`, never under a live
  holder's lease, and the revision never goes backwards.
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
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from engine.approvals.identity import hostname, os_user
from engine.codec.document import parse_document
from engine.codec.splice import splice
from engine.errors import HandoffError, LedgerInvalid, ReadOnly, Refused
from engine.lease.heartbeat import beat_record
from engine.ledger.model import Ledger
from engine.store import highwater, history, outside
from engine.store.base import Snapshot, WatchEvent
from engine.store.bulk import first_read
from engine.store.convert import change, check_states, to_ledger
from engine.store.cow import cow_ledger, written
from engine.store.file import digest
from engine.store.filelock import LockTimeout, lock_timeout
from engine.store.pg_conn import (
    SCHEMA,
    Db,
    _connect,
    _first_line,
    driver,
    ensure_schema,
    outage_limit,
    shown,
    split_location,
)
from engine.store.pg_journal import PgJournal

# Re-exported: the store's one import for what lives beside it.
__all__ = ["CHANNEL", "SCHEMA", "Db", "PgHeartbeat", "PgJournal", "PostgresStore", "driver", "outage_limit", "shown",
           "split_location"]

T = TypeVar("T")
Written = tuple[int | None, str | None]  # what the newest write the history rows record made: (revision, text's digest)
CHANNEL = "handoff_ledger"
_LOCK_CLASS = 0x68616E64  # "hand": the first key of every ledger's advisory lock


def _app_name() -> str:
    """Who we are, for a writer that waits on our lock (pg_stat_activity.application_name)."""
    command = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:2]])
    return f"handoff pid {os.getpid()} on {hostname()} ({command})"[:63]


def _never() -> bool:
    """`Db.run`'s `retry` for work that is not worth waiting out an outage for."""
    return False


class PostgresStore:
    """A ledger in a PostgreSQL row."""

    def __init__(self, location: str, *, read_only: bool = False) -> None:
        self.location = location
        self.url, self.name = split_location(location)
        self.path = shown(location)
        self.read_only = read_only
        self.db = Db(self.url)
        self.on_lock_wait: Callable[[str], bool] | None = None  # holder text -> keep waiting?
        self.saw_external_edit = self.journaled_external_edit = False  # a row edited in SQL: journaled in the write (_apply)
        self.history_lost: str | None = None  # the history record is in the ledger's own transaction: never lost alone
        self.unsettled: str | None = None  # why the last write may or may not be in (transact)
        self._cache: tuple[str, Any, Ledger | None] | None = None

    @property
    def patience(self) -> float:
        return self.db.patience

    @patience.setter
    def patience(self, seconds: float) -> None:
        """Ride out database outages this long (the journal shares the setting)."""
        self.db.patience = seconds

    def _row(self, conn, *, lock: bool = False) -> tuple[int, str, Written]:
        """(revision, body) of the ledger's row and what the newest write its history rows record
        (engine.store.history) made: its revision and the digest of its text. One statement: one
        moment of the database."""
        from psycopg.errors import UndefinedTable

        sql = ("SELECT l.revision, l.body, h.rev, h.body_digest FROM handoff_ledger l LEFT JOIN LATERAL ("
               "SELECT record->'rev' AS rev, record->>'body_digest' AS body_digest FROM handoff_journal WHERE ledger = %s "
               "AND record->>'kind' = 'ledger_write' AND record->>'target' IS NULL ORDER BY seq DESC LIMIT 1) h ON true "
               "WHERE l.name = %s" + (" FOR UPDATE OF l" if lock else ""))
        try:
            row = conn.execute(sql, (history.pg_name(self.name), self.name)).fetchone()
        except UndefinedTable:
            raise LedgerInvalid(f"no handoff tables in this database; import a ledger first with `handoff import FILE {self.path}`", path=self.path) from None
        if row is None:
            raise LedgerInvalid(f"no ledger named {self.name!r} here; import one with `handoff import FILE {self.path}`", path=self.path)
        rev = row[2] if isinstance(row[2], int) and not isinstance(row[2], bool) else None
        return row[0], row[1], (rev, row[3])

    def _parse(self, body: str, *, fresh: bool = False, journaled: Written = (None, None)) -> tuple[Snapshot, Any]:
        """The row's `body` as a snapshot; `journaled` is what the newest write its history rows
        record made (`_row`): a row below it went back in time, another text was edited by hand."""
        key = digest(body.encode("utf-8"))
        with first_read():  # a process's first read: no cyclic collections while it builds (engine.store.bulk)
            if self._cache and self._cache[0] == key and not fresh:
                parsed, ledger = self._cache[1], self._cache[2]
            else:
                parsed = parse_document(body, self.path)
                ledger = None
            if ledger is None or fresh:
                ledger = to_ledger(parsed.data, self.path, body)
                if not fresh:
                    self._cache = (key, parsed, ledger)
        snap = Snapshot(ledger, key)
        # The row restored from a backup: below this user's mark, or below the engine's newest write its history rows record.
        late = highwater.behind(self._mark(ledger), ledger.revision) or self._behind_history(ledger.revision, journaled[0])
        if late:
            snap.rollback.append(late)
            snap.warnings.append(f"{self.path} went back in time: {late}. It may hold approvals already used; nothing "
                                 f"acts on it. Restore the newest copy, or run `handoff check {self.path} "
                                 "--accept-rollback` if this is meant.")
        # Changed outside the engine (an UPDATE of the row): the next write diffs it against the engine's last, journals
        # it and flags what no step would do, as a file ledger's hand edit (engine.store.outside).
        snap.external_edit = isinstance(journaled[1], str) and journaled[1] != key and not late
        return snap, parsed

    def _behind_history(self, revision: int, journaled: int | None) -> str | None:
        """A rollback sentence when the row's `revision` is below the newest write its history
        rows record (`journaled`, read with the row): whoever reads it, whatever this user has seen."""
        if journaled is None or revision >= journaled:
            return None
        return (f"its revision is {revision}, lower than the engine's newest write its history rows record (revision "
                f"{journaled}, in {history.pg_name(self.name)}): the row may have been restored from a backup")

    def _mark(self, ledger: Ledger) -> str:
        """The key of this ledger's per-user high-water mark (engine.store.highwater)."""
        # The location as shown (password masked): a masked URL no longer parses as one.
        return highwater.identity(ledger, self.path)

    def snapshot(self) -> Snapshot:
        _, body, journaled = self.db.run(self._row)
        return self._parse(body, journaled=journaled)[0]

    def read(self) -> Ledger:
        return self.snapshot().ledger

    def read_file_alone(self) -> None:
        """Nothing to do: a database ledger keeps no per-user parse cache."""

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False, accept_rollback: bool = False,
                 patient: bool = True) -> tuple[T, int]:
        """Apply `fn` to the ledger row under the writers' lock; returns (fn's result, revision).
        `patient=False`: one try, no wait for a server out of reach (a write that can be
        skipped, as a step's pid note, must not spend the outage allowance of the ones that
        cannot, nor mark the connection given up for them)."""
        if self.read_only:
            raise ReadOnly("this view is read-only; nothing can be changed from it")
        marks: list = []
        sent: list = []  # (revision, text, fn's result, transaction id) of each attempt whose UPDATE reached the server
        self.unsettled = None
        self.saw_external_edit = self.journaled_external_edit = False
        try:
            done = self.db.run(lambda conn: self._locked(conn, lambda: self._apply(conn, fn, accept_rollback, marks, sent)),
                               retry=None if patient else _never)
        except HandoffError:
            landed = self._settle(sent) if sent else -1
            if landed is None:
                self.unsettled = "the write's COMMIT was sent, and whether the server applied it cannot be told"
            if landed is None or landed < 0:
                raise
            revision, _, result, _ = sent[landed]
            done, marks[:] = (result, revision), marks[landed:landed + 1]
        self._raise_mark(marks)
        return done

    def _settle(self, sent: list) -> int | None:
        """After a write that failed once its UPDATE had reached the server (a connection
        dropped at the COMMIT, a retry given up): which attempt of `sent` the server
        committed (its index), -1 when none did, None when that cannot be told. The
        server's own word on each attempt's transaction (`txid_status`), asked on a new
        connection; one still in progress (the server has not yet seen its client go) is
        waited for as a lock is (HANDOFF_LOCK_TIMEOUT)."""
        xids = [s[3] for s in sent]
        deadline = time.monotonic() + lock_timeout()
        while True:
            try:
                said = self.db.run(lambda conn: [r[0] for r in conn.execute(
                    "SELECT txid_status(x) FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(x, i) ORDER BY i",
                    (xids,)).fetchall()], autocommit=True, retry=_never)
            except HandoffError:
                return None
            if "committed" in said:
                return max(i for i, status in enumerate(said) if status == "committed")
            if all(status == "aborted" for status in said):
                return -1
            if None in said or time.monotonic() > deadline:
                return None
            time.sleep(0.2)

    @staticmethod
    def _raise_mark(marks: list) -> None:
        """After the commit (a mark ahead of a lost commit would call the row a rollback)."""
        for mark in marks[-1:]:
            try:
                highwater.raise_mark(*mark)
            except OSError:
                pass  # the witnesses in the database still stand

    def fence(self, check: Callable[[Ledger], None], spawn: Callable[[], T], *,
              first: Callable[[], None] | None = None) -> T:
        """Spawn only while the caller provably still holds the ledger (FileStore.fence):
        check, `first()` and spawn happen in one database transaction holding the lock, and
        a row that went back in time (restored from a backup) is refused before `check`.

        A lock held by a connection ends with the connection: one that dies after `check`
        (while `first()` journals the step's start, on a connection of its own) would let
        another writer in (an approval withdrawn, the lease taken) before the spawn. So
        right before the spawn the fence's own connection is asked once more (`SELECT 1`):
        an answer means its transaction, and so the lock, is still the server's to hold; a
        connection gone by then fails the work before anything is spawned, and `Db.run`
        checks again on a new one. What stays open is the spawn itself (a fork and exec).

        `Db.run` never retries once the process has been spawned: a retry would check and
        spawn again, and there is nothing left to commit (the transaction only read). A
        connection that drops at the COMMIT is no error of the spawn's: the intent the
        process carries out is on disk already, and is how a later session finds it."""
        spawned: list[T] = []

        def work(conn):
            _, body, journaled = self._row(conn, lock=True)
            snap = self._parse(body, fresh=True, journaled=journaled)[0]
            if snap.rollback:  # a row restored from a backup can hold our lease and intent: refused, as in the file store
                raise Refused(snap.warnings[-1], title="Ledger went back in time")
            check(snap.ledger)
            if first is not None:
                first()
            conn.execute("SELECT 1 AS fence_still_held")  # the lock is still this transaction's (see above)
            spawned.append(spawn())

        try:
            self.db.run(lambda conn: self._locked(conn, lambda: work(conn)), retry=lambda: not spawned)
        except Exception:  # noqa: BLE001 - once spawned, the process runs whatever became of a read-only transaction
            if not spawned:
                raise
        return spawned[0]

    def _locked(self, conn, work: Callable[[], T]) -> T:
        """`work()` in a transaction of `conn` holding this ledger's advisory lock. A wait
        past HANDOFF_LOCK_TIMEOUT names the holder, then gives up (LockTimeout) unless
        `on_lock_wait` says to keep waiting (a running session does)."""
        from psycopg.errors import LockNotAvailable

        while True:
            try:
                with conn.transaction():
                    conn.execute("SELECT set_config('application_name', %s, true)", (_app_name(),))
                    conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(lock_timeout() * 1000)}ms",))
                    conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_CLASS, self.name))
                    conn.execute("SELECT set_config('lock_timeout', '0', true)")
                    return work()
            except LockNotAvailable:
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

    def _apply(self, conn, fn: Callable[[Ledger], T], accept_rollback: bool = False, marks: list | None = None,
               sent: list | None = None) -> tuple[T, int]:
        """Inside the locked transaction: `fn` on a copy, spliced into the stored text;
        what the high-water mark is to record once committed goes into `marks`.

        `sent` holds what an earlier attempt of this same write updated the row to. A
        COMMIT the server applied but whose reply was lost makes `Db.run` try again on a
        new connection: finding the row exactly as that attempt left it (its revision and
        its text; any other writer since would have moved the revision on), the write is
        done, and its result is that attempt's. Applied again, `fn` would meet its own
        change as someone else's: a step's intent refused as "already in flight", its
        outcome as "cleared by someone else"."""
        revision, body, journaled = self._row(conn, lock=True)
        if sent and (revision, body) == sent[-1][:2]:
            return sent[-1][2], revision
        snap, parsed = self._parse(body, fresh=True, journaled=journaled)
        if snap.rollback and not accept_rollback:
            raise Refused(snap.warnings[-1], title="Ledger went back in time")
        ledger = cow_ledger(snap.ledger)
        edit = self._edit(snap) if snap.external_edit else None
        # A person accepting a rollback has looked at the row: journaled, not flagged.
        flagged = outside.flag(ledger, edit) if edit and not accept_rollback else []
        result = fn(ledger)
        mark = self._mark(ledger)
        ledger.revision = max(ledger.revision, revision, highwater.read_mark(mark)["revision"], journaled[0] or 0) + 1
        try:
            ledger.targets, names = written(ledger.targets)
            check_states(snap.ledger, ledger, names)
            spent = highwater.newly_spent(snap.ledger, ledger, ledger.targets if names is None else names)
            used = highwater.already_spent(mark, spent)
            if used:
                raise Refused(used, title="Approval already used")
            doc = splice(parsed, change(snap.ledger, ledger, names))
            text = doc.text
        except ValueError as err:  # an unknown state, text YAML cannot hold, a failed read-back
            raise Refused(str(err), title="Cannot write that") from None
        updated = conn.execute(  # the transaction's id: whether it committed can be asked after a lost reply (_settle)
            "UPDATE handoff_ledger SET revision = %s, body = %s, updated_at = now() WHERE name = %s AND revision = %s "
            "RETURNING txid_current()",
            (ledger.revision, text, self.name, revision),
        ).fetchone()
        if updated is None:
            raise Refused("the ledger changed underneath (revision moved); try again", title="Changed underneath")
        # A row edited by hand is kept whole in the history: no diff of the engine's own is the edit's.
        self._journal_write(conn, ledger, parsed.data, doc.data, names, None if snap.external_edit else revision,
                            digest(text.encode("utf-8")))
        if snap.external_edit:
            self._journal_edit(conn, ledger, edit, flagged)
        self.saw_external_edit = self.journaled_external_edit = snap.external_edit
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))
        if marks is not None:
            marks.append((mark, ledger.revision, spent))
        if sent is not None:
            sent.append((ledger.revision, text, result, updated[0]))
        return result, ledger.revision

    def _edit(self, snap: Snapshot) -> list[dict[str, Any]] | None:
        """The field diff of a row edited by hand against the engine's last write, as its history
        rows rebuild it (one read of them: only after such an edit); None when they cannot."""
        saved = outside.written_in(self.open_history().stream())
        return None if saved is None else outside.diff(saved, snap.ledger)

    def _journal_edit(self, conn, ledger: Ledger, found: list[dict[str, Any]] | None, flagged: list[str]) -> None:
        """The `external_edit` record of a row edited by hand, in the write's own transaction."""
        targets = sorted({c["target"] for c in found or []})
        msg = (f"the ledger's row was changed outside the engine before revision {ledger.revision}: "
               + (f"{len(found or [])} field change(s) on {', '.join(targets[:10]) + (' ...' if len(targets) > 10 else '') or 'no target'}"
                  if found is not None else "what changed cannot be told (the history rows do not rebuild the last write)"))
        if flagged:
            msg += f"; not trusted until `handoff reconcile`: {', '.join(flagged[:10])}"
        PgJournal(self.db, self.name, redact=ledger.redact).append_in(
            conn, "external_edit", msg, actor="outside the engine", rev=ledger.revision, changes=(found or [])[:1000],
            flagged=flagged)

    def _journal_write(self, conn, ledger: Ledger, before: dict, after: dict, names: set[str] | None, base: int | None,
                       body_digest: str) -> None:
        """This write's `ledger_write` record (engine.store.history), in the write's own
        transaction: a diff on revision `base` when the journal's newest one is that
        revision, else the whole ledger. It names the journal's newest row (`journal_head`),
        which the next write finds there, or notes that the journal's rows were deleted."""
        journal = PgJournal(self.db, history.pg_name(self.name))
        last, named = journal.last_write(conn)
        ours = base is not None and last == base
        head = PgJournal(self.db, self.name).head_after(conn, named, ledger.revision)  # the journal's rows cut under it are noted
        history.record(journal, ledger, before, after, names, base if ours else None, conn=conn, journal_head=head,
                       body_digest=body_digest)

    def import_text(self, text: str, *, replace: bool = False) -> int:
        """Create the ledger from YAML text (validated first). Over an existing ledger only
        with `replace`, never while a live holder has its lease, and the revision never
        goes backwards (the imported text gets one above the stored one, and above the newest
        write the history rows record)."""
        from engine.lease.rules import lease_state

        parsed = parse_document(text, self.path)
        ledger = to_ledger(parsed.data, self.path, text)
        ensure_schema(self.db)

        def work(conn):
            row = conn.execute("SELECT revision, body FROM handoff_ledger WHERE name = %s FOR UPDATE", (self.name,)).fetchone()
            # Above the stored row's revision and any write the history rows record (a row deleted by hand, imported again).
            written = PgJournal(self.db, history.pg_name(self.name)).last_write_rev(conn)
            floor = max(row[0] if row is not None else -1, written if written is not None else -1)
            body, revision = text, ledger.revision
            if row is not None:
                if not replace:
                    raise Refused(f"a ledger named {self.name!r} already exists at {self.path} (revision {row[0]}); "
                                  "nothing was changed. Export it first, then import with --replace if you mean to replace it",
                                  title="Ledger exists")
                current = self._parse(row[1], fresh=True)[0].ledger
                state = lease_state(current.session, self.heartbeat().current())
                if state.status == "live":
                    raise Refused(f"{state.detail} holds this ledger; stop it (`handoff stop {self.path}`) before "
                                  "replacing the ledger under it. Nothing was changed", title="Ledger in use")
            if ledger.revision <= floor:
                bumped = ledger.model_copy()
                bumped.revision = revision = floor + 1
                body = splice(parsed, change(ledger, bumped, set())).text
            conn.execute(
                "INSERT INTO handoff_ledger (name, revision, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET revision = EXCLUDED.revision, body = EXCLUDED.body, updated_at = now()",
                (self.name, revision, body),
            )
            stored = parse_document(body, self.path)  # what the row now says, journaled whole
            self._journal_write(conn, to_ledger(stored.data, self.path, body), {}, stored.data, None, None,
                                digest(body.encode("utf-8")))
            # Like every engine write, journaled with its revision: a journal whose newest record is older was cut.
            PgJournal(self.db, self.name).append_in(
                conn, "import", f"ledger imported at revision {revision}" + (" over the one there" if row else ""),
                actor=os_user(), rev=revision)
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))
            return revision

        return self.db.run(lambda conn: self._locked(conn, lambda: work(conn)))

    def export_text(self) -> str:
        return self.db.run(self._row)[1]

    def last_write(self) -> dict[str, Any]:
        """The row's revision: the database row is its own record of the last write (no
        sidecar), and every engine write, an import too, journals a record of its revision."""
        return {"revision": self.db.run(self._row)[0]}

    def heartbeat(self) -> PgHeartbeat:
        return PgHeartbeat(self.db, self.name)

    def open_history(self) -> PgJournal:
        """The history journal of this ledger (engine.store.history), read-only."""
        return PgJournal(self.db, history.pg_name(self.name), read_only=True)

    def open_journal(self, *, read_only: bool = False) -> PgJournal:
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
    """The lease holder's heartbeat in `handoff_heartbeat` (one row per ledger), so a
    holder on another host sees it. Its age is measured on the database's clock
    (`now()` when it was written against `now()` when it is read): no two hosts' clocks
    are ever compared."""

    def __init__(self, db: Db, ledger: str) -> None:
        self.db = db
        self.ledger = ledger
        self._ready = False

    def write(self, holder: str, **state: Any) -> None:
        """Record a beat; the database stamps it. Raises OSError when it cannot."""
        record = json.dumps(beat_record(holder, **state))

        def work(conn):
            if not self._ready:  # a ledger imported before this table (or its beat_at column) existed
                conn.execute(SCHEMA)
                self._ready = True
            conn.execute(
                "INSERT INTO handoff_heartbeat (ledger, record, beat_at) VALUES (%s, %s::jsonb, now()) "
                "ON CONFLICT (ledger) DO UPDATE SET record = EXCLUDED.record, beat_at = now()",
                (self.ledger, record),
            )

        try:
            self.db.run(work, autocommit=True)
        except HandoffError as err:  # the beat thread counts any failure as silence
            raise OSError(str(err)) from None

    def remove(self) -> None:
        try:
            self.db.run(lambda conn: conn.execute("DELETE FROM handoff_heartbeat WHERE ledger = %s", (self.ledger,)),
                        autocommit=True)
        except HandoffError:
            pass  # a leftover heartbeat of a released lease proves nothing (lease_state ignores it)

    def current(self) -> dict[str, Any] | None:
        """The beat with its `age` on the database's clock, or None."""
        def work(conn):
            return conn.execute(
                "SELECT record, extract(epoch from now() - beat_at) FROM handoff_heartbeat WHERE ledger = %s",
                (self.ledger,),
            ).fetchone()

        try:
            row = self.db.run(work)
        except HandoffError:
            return None  # no readable heartbeat is no proof of life
        if not row:
            return None
        beat = dict(row[0])
        beat["age"] = max(0.0, float(row[1]))
        return beat
