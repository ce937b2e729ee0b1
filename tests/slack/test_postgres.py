"""A PostgreSQL ledger approved from Slack: the approval in the ledger's row, the
delivery keys in `handoff_slack`, a replayed body still one approval."""

from __future__ import annotations

import uuid

import psycopg
import pytest
import yaml

from engine.api import open_ledger
from engine.store.postgres import PostgresStore
from tests.slack.kit import ALICE, ledger, posted, review, wait_for

PG = "postgresql://127.0.0.1/test"


@pytest.fixture
def pg_ledger(tmp_path):
    """The Slack test ledger imported as its own uniquely named PostgreSQL ledger."""
    name = f"slack_{uuid.uuid4().hex[:10]}"
    location = f"{PG}#{name}"
    PostgresStore(location).import_text(ledger(tmp_path).read_text())
    yield location, name
    with psycopg.connect(PG, autocommit=True) as conn:
        for table in ("handoff_ledger", "handoff_journal", "handoff_heartbeat", "handoff_slack"):
            column = "name" if table == "handoff_ledger" else "ledger"
            try:
                conn.execute(f"DELETE FROM {table} WHERE {column} = %s", (name,))
            except psycopg.errors.UndefinedColumn:
                pass


def test_a_postgres_ledger_is_approved_once_from_slack(pg_ledger, fake, signer, started):
    """Review, submit, submit the same body again: one approval `via: slack`, two rows for one delivery."""
    location, name = pg_ledger
    app = started(fake, [location])
    posted(fake)
    view = review(app, fake, signer, ALICE)
    body = signer.body(signer.submit(view, ALICE, "db-1"))
    headers = signer.headers(body)
    assert signer.post(app.url, body=body, headers=headers)[0] == 200
    assert signer.post(app.url, body=body, headers=headers)[0] == 200

    def approvals():
        return open_ledger(location, read_only=True).load().targets["db-1"].approvals

    found = wait_for(approvals, what="the approval in PostgreSQL")
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited")
    assert len(approvals()) == 1 and found[0].via == "slack" and found[0].slack["user"] == ALICE
    with psycopg.connect(PG) as conn:
        rows = conn.execute("SELECT record->>'status' FROM handoff_slack WHERE ledger = %s AND record ? 'delivery' "
                            "ORDER BY seq", (name,)).fetchall()
    assert [r[0] for r in rows] == ["received", "done"]
    records = open_ledger(location, read_only=True).journal.for_target("db-1", 50)
    assert [r for r in records if r["kind"] == "approval" and r.get("via") == "slack"]
    assert yaml.safe_load(PostgresStore(location).export_text())["targets"]["db-1"]["state"] == "verified"
