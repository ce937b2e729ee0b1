"""A PostgreSQL ledger restored from a backup (its row and its journal rows put back
as they were before an irreversible step ran) is refused like a rollback by the
per-user high-water mark, and the spent approval never runs the step again."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
import yaml

from tests.conftest import cli_env

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
LINK = "import sys; open(sys.argv[1], 'a').write('x')"


@pytest.fixture(scope="module", autouse=True)
def server_is_up():
    """PostgreSQL must be there: a missing server fails these tests, never skips them."""
    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not reachable at {PG}: {err}")


def handoff_pg(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=90, stdin=subprocess.DEVNULL)


def sql(statement: str, *params) -> list:
    """`statement` run in PostgreSQL as a role that may write the tables would (autocommit); its rows, if any."""
    with psycopg.connect(PG, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def new_ledger(data: dict, prefix: str = "t") -> tuple[str, str]:
    """`data` imported as a new PostgreSQL ledger under a fresh name: (name, location). Fails,
    never skips, when the server is not there (for tests in other modules, which this module's
    `server_is_up` does not cover)."""
    from engine.store.postgres import PostgresStore

    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        raise AssertionError(f"PostgreSQL is not reachable at {PG}: {err}") from None
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    location = f"{PG}#{name}"
    PostgresStore(location).import_text(yaml.safe_dump(data, sort_keys=False))
    return name, location


def link_and_finish(task: str, runs: Path) -> dict:
    """A ledger whose target `a` (checked) takes irreversible `link` (it appends to `runs`), then `finish`."""
    return {"task": task, "owner_shift": "test-oncall", "targets": {"a": {"state": "checked"}},
            "runbook": {"steps": [
                {"name": "link", "from": "checked", "to": "linked", "reversible": False,
                 "run": [sys.executable, "-c", LINK, str(runs)]},
                {"name": "finish", "from": "linked", "to": "done", "reversible": True, "run": ["true"]}]}}


def drop(name: str) -> None:
    """The ledger `name`, its journal and its history rows removed."""
    sql("DELETE FROM handoff_journal WHERE ledger IN (%s, %s)", name, f"{name}#history")
    sql("DELETE FROM handoff_ledger WHERE name = %s", name)


def approved_link(tmp_path: Path, task: str) -> tuple[str, str, Path, dict[str, str]]:
    """A new PostgreSQL ledger (name, location): target `a`'s irreversible `link` (it appends
    to `runs`) approved by human-1; the environment its commands run in (`env`)."""
    runs = tmp_path / "runs.txt"
    name, location = new_ledger({"task": task, "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, "-c", LINK, str(runs)]}]}})
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    assert handoff_pg(env, "approve", location, "a", "--as", "human-1").returncode == 0
    return name, location, runs, env


def test_a_restored_database_ledger_is_refused_and_the_spent_approval_never_runs_again(tmp_path: Path):
    name, location, runs, env = approved_link(tmp_path, "pg-restore")
    with psycopg.connect(PG, autocommit=True) as conn:  # the backup
        revision, body = conn.execute("SELECT revision, body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()
        seq = conn.execute("SELECT coalesce(max(seq), 0) FROM handoff_journal WHERE ledger = %s", (name,)).fetchone()[0]
    first = handoff_pg(env, "resume", "--ledger", location)
    assert first.returncode == 0 and len(runs.read_text()) == 1, first.stdout + first.stderr

    with psycopg.connect(PG, autocommit=True) as conn:  # the restore: row and journal as they were
        conn.execute("UPDATE handoff_ledger SET revision = %s, body = %s WHERE name = %s", (revision, body, name))
        conn.execute("DELETE FROM handoff_journal WHERE ledger = %s AND seq > %s", (name, seq))
    again = handoff_pg(env, "resume", "--ledger", location)
    said = again.stdout + again.stderr
    assert again.returncode != 0 and "went back in time" in said and "restored from a backup" in said, said
    assert len(runs.read_text()) == 1 and "Traceback" not in said
    with psycopg.connect(PG, autocommit=True) as conn:
        assert conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0] == body

    accepted = handoff_pg(env, "check", location, "--accept-rollback", "--as", "human-2")
    said = accepted.stdout + accepted.stderr
    # Accepted; the journal rows restored with it lost the run's records, which `check` still names.
    assert "rollback accepted (journaled)" in said and accepted.returncode == 1 and "deleted from the journal" in said, said
    after = handoff_pg(env, "resume", "--ledger", location)
    said = after.stdout + after.stderr
    # The spent mark in the database (not restored with the row) says so first; this user's marks would too.
    assert len(runs.read_text()) == 1 and ("already used" in said or "it is never run twice" in said), said
    assert "Traceback" not in said, said
