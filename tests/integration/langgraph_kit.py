"""What the LangGraph runtime's tests share: a PostgreSQL schema of the test's own for the
real PostgresSaver (database `test`, dropped after), the demo fleet, and a thread run in
this process exactly as `handoff resume --runtime langgraph` runs it.

A missing PostgreSQL fails the test (psycopg raises), never skips it.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import demo_copy, env, load  # noqa: E402

PG = "postgresql://127.0.0.1/test"


@pytest.fixture
def checkpointer():
    """A connection string whose search_path is a fresh schema; the schema is dropped after."""
    schema = f"lg_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{PG}?options=-csearch_path%3D{schema}", schema
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def rows(schema: str, table: str, thread: str | None = None) -> int:
    with psycopg.connect(PG) as conn:
        where = " WHERE thread_id = %s" if thread else ""
        return conn.execute(f"SELECT count(*) FROM {schema}.{table}{where}", (thread,) if thread else ()).fetchone()[0]


def small_fleet(tmp: Path, *names: str) -> Path:
    """The demo fleet cut to `names` (db-18 replicating, the others queued)."""
    targets = {n: ({"state": "replicating", "checkpoint": "0/9A3F2C10"} if n == "db-18" else {"state": "queued"})
               for n in names}
    return demo_copy(tmp, targets=targets)


class Thread:
    """A ledger's graph thread driven in this process by the real runtime's pieces, the
    lease held under the thread id as the runtime holds it."""

    def __init__(self, ledger: Path, url: str, monkeypatch) -> None:
        from engine.cli.langgraph_cmds import _acquire, _ledger_id
        from engine.langgraph import thread_id
        from engine.lease import leasing
        from engine.ledger.access import open_writer

        for key, value in env(ledger.parent.parent / "world").items():
            monkeypatch.setenv(key, value)
        self.ledger, self.url = ledger, url
        writer = open_writer(str(ledger), actor="agent:test")
        self.thread = thread_id(_ledger_id(writer))
        _acquire(writer.store, str(ledger), leasing.session_lease(self.thread, user="test", planner="autopilot",
                                                                  runtime="langgraph"))
        self.job = {"ledger": str(ledger), "ledger_arg": str(ledger), "thread_id": self.thread, "actor": "agent:test"}

    def app(self, saver):
        from engine.langgraph import graph

        return graph.build(self.job, list(load(self.ledger)["targets"]), None).compile(checkpointer=saver)

    def config(self, **extra):
        from engine.langgraph.graph import config

        cfg = config(self.thread)
        cfg["configurable"].update(extra)
        return cfg
