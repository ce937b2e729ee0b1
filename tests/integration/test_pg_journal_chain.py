"""The PostgreSQL journal: the same hash chain, unredacted witnesses, and unbounded witness lookups.

Against the real local server (a missing server fails, never skips): rows are sealed
in seq order under the advisory lock, an UPDATE of one row is found at its seq, and a
spent approval is found behind thousands of later rows through the witness index.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from engine.store.pg_conn import SCHEMA, Db
from engine.store.pg_journal import PgJournal

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")


@pytest.fixture
def pg_journal():
    """A journal for a fresh ledger name, with the schema in place; its rows removed after."""
    import psycopg

    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not reachable at {PG}: {err}")
    name = f"chain-{uuid.uuid4().hex[:10]}"
    journal = PgJournal(Db(PG), name, redact=["[0-9a-f]{16}"])
    journal.db.run(lambda conn: conn.execute(SCHEMA))
    yield journal
    journal.db.run(lambda conn: conn.execute("DELETE FROM handoff_journal WHERE ledger = %s", (name,)))


def test_rows_are_chained_and_an_updated_row_is_found_at_its_seq(pg_journal: PgJournal) -> None:
    """Five rows verify; an UPDATE rewriting one row's msg breaks the chain at exactly that seq."""
    seqs = [pg_journal.append("log", f"row {i}", actor="tester", rev=i)["seq"] for i in range(5)]
    assert pg_journal.verify().ok
    target = seqs[2]
    pg_journal.db.run(lambda conn: conn.execute(
        "UPDATE handoff_journal SET record = jsonb_set(record, '{msg}', %s::jsonb) WHERE seq = %s", (json.dumps("forged"), target)))
    verdict = pg_journal.verify()
    assert [b.seq for b in verdict.breaks] == [target], verdict.breaks


def test_a_redact_pattern_never_blinds_the_witness_and_the_lookup_reaches_past_many_rows(pg_journal: PgJournal) -> None:
    """`redact: [hex16]`: the approval hash is stored as it is, and found behind 3,000 later rows."""
    pg_journal.append("step_start", "db-50: starting link", actor="agent", target="db-50", step="link",
                      token="s1/abcd1234", approval_hash="0123456789abcdef", approval_by="human-1",
                      approval_at="2026-12-01T09:00:00Z", note="secret 0123456789abcdef here")
    rows = [(pg_journal.ledger, json.dumps({"kind": "log", "msg": f"chatty {i}", "target": "db-51"})) for i in range(3000)]
    pg_journal.db.run(lambda conn: conn.cursor().executemany(
        "INSERT INTO handoff_journal (ledger, record) VALUES (%s, %s::jsonb)", rows))
    found = pg_journal.last_of("step_start", target="db-50", approval_hash="0123456789abcdef",
                               approval_by="human-1", approval_at="2026-12-01T09:00:00Z")
    assert found is not None and found["approval_hash"] == "0123456789abcdef"
    assert "0123456789abcdef" not in found["note"]  # the rest of the record is still redacted
    assert pg_journal.last_of("step_start", target="db-50", token="s1/abcd1234")["seq"] == found["seq"]
