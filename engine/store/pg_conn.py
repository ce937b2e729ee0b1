"""Connections to PostgreSQL for the store and its journal: the location's parts, the
driver (the `postgres` extra, named when it is missing), errors in one line of our
words with the password masked, and riding out an outage for a running session."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urldefrag

from engine.audit.redact import redact
from engine.errors import HandoffError, LedgerInvalid, ServiceUnavailable, UsageError
from engine.settings import seconds

T = TypeVar("T")
OUTAGE_ENV = "HANDOFF_DB_OUTAGE_SECONDS"
# The proofs of approvals (engine.store.pg_attest): a trigger stamps each row with the role that wrote it.
SET_BY = "NEW.recorded_by := session_user;"

ATTEST_PIECES = [
    ("to_regclass('handoff_attest') IS NULL", """CREATE TABLE handoff_attest (
        ledger text NOT NULL,
        proof text NOT NULL,
        body text NOT NULL,
        recorded_by name NOT NULL DEFAULT session_user,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (ledger, proof, recorded_by))"""),
    # to_regprocedure: this database's function, never one of another session's temporary schema.
    ("to_regprocedure('handoff_attest_by()') IS NULL",
     f"""CREATE FUNCTION handoff_attest_by() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN {SET_BY} RETURN NEW; END $fn$"""),
    ("NOT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'handoff_attest_by' AND tgrelid = 'handoff_attest'::regclass)",
     """CREATE TRIGGER handoff_attest_by BEFORE INSERT OR UPDATE ON handoff_attest
        FOR EACH ROW EXECUTE FUNCTION handoff_attest_by()"""),
]



# Each piece is made only where it is missing (a role that owns none of the tables, as an
# agent's should not, may run this: CREATE ... IF NOT EXISTS and ALTER TABLE ask for
# ownership even when there is nothing to do). Another process making a piece at the same
# moment is no error. Run in one DO block: one round trip.
_PIECES = [
    ("to_regclass('handoff_ledger') IS NULL", """CREATE TABLE handoff_ledger (
        name text PRIMARY KEY,
        revision bigint NOT NULL,
        body text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now())"""),
    ("to_regclass('handoff_journal') IS NULL", """CREATE TABLE handoff_journal (
        seq bigserial PRIMARY KEY,
        ledger text NOT NULL,
        record jsonb NOT NULL)"""),
    ("to_regclass('handoff_journal_ledger') IS NULL", "CREATE INDEX handoff_journal_ledger ON handoff_journal (ledger, seq)"),
    # The witness lookups (a spent approval, an intent's start): by kind and target, newest first,
    # however long the journal (engine.store.pg_journal).
    ("to_regclass('handoff_journal_witness') IS NULL",
     "CREATE INDEX handoff_journal_witness ON handoff_journal (ledger, (record->>'kind'), (record->>'target'), seq)"),
    ("to_regclass('handoff_heartbeat') IS NULL", """CREATE TABLE handoff_heartbeat (
        ledger text PRIMARY KEY,
        record jsonb NOT NULL)"""),
    # When the database received the beat: ages are measured on the database's clock.
    ("NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'handoff_heartbeat'::regclass AND attname = 'beat_at' "
     "AND NOT attisdropped)", "ALTER TABLE handoff_heartbeat ADD COLUMN beat_at timestamptz NOT NULL DEFAULT now()"),
    *ATTEST_PIECES,
]
SCHEMA = "DO $schema$ BEGIN\n" + "".join(
    f"    IF {missing} THEN\n        BEGIN\n            {ddl};\n        EXCEPTION WHEN duplicate_table OR duplicate_object "
    "OR unique_violation THEN NULL;\n        END;\n    END IF;\n" for missing, ddl in _PIECES) + "END $schema$;\n"


def split_location(location: str) -> tuple[str, str]:
    """(libpq URL, ledger name) from `postgresql://.../db#name`."""
    url, name = urldefrag(location)
    return url, name or "default"


def shown(location: str) -> str:
    """A location fit to print: a password in it is masked."""
    return redact(location)


def outage_limit() -> float:
    """Seconds a running session waits out a database outage (HANDOFF_DB_OUTAGE_SECONDS)."""
    return seconds(OUTAGE_ENV)


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

    def run(self, work: Callable[[Any], T], *, autocommit: bool = False, retry: Callable[[], bool] | None = None) -> T:
        """`work(conn)` in one connection (committed when it returns); errors in our words.
        A dropped connection is tried again within the patience, unless `retry()` says no."""
        psycopg = driver()
        deadline: float | None = None
        pause = 0.25
        while True:
            try:
                with psycopg.connect(self.url, autocommit=autocommit, connect_timeout=10) as conn:
                    self.gave_up = False
                    return work(conn)
            except psycopg.OperationalError as err:  # refused, dropped, the server going away
                if self.patience <= 0 or (retry is not None and not retry()):
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


