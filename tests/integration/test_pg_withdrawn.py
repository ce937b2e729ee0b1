"""PostgreSQL ledger: a withdrawn approval written back into the row never runs."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import yaml

from tests.conftest import cli_env

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
LINK = "import sys; open(sys.argv[1], 'a').write('x')"


def _handoff(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=90, stdin=subprocess.DEVNULL)


def test_a_withdrawn_approval_written_back_into_the_row_never_runs(tmp_path: Path):
    from engine.store.postgres import PostgresStore

    runs = tmp_path / "runs.txt"
    name = f"t-{uuid.uuid4().hex[:10]}"
    location = f"{PG}#{name}"
    data = {"task": "pg-withdrawn", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, "-c", LINK, str(runs)]}]}}
    PostgresStore(location).import_text(yaml.safe_dump(data, sort_keys=False))
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    assert _handoff(env, "approve", location, "a", "--as", "human-1").returncode == 0
    with psycopg.connect(PG, autocommit=True) as conn:
        held = yaml.safe_load(conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0])
    held = held["targets"]["a"]["approvals"]
    assert _handoff(env, "unapprove", location, "a", "--as", "human-1").returncode == 0
    with psycopg.connect(PG, autocommit=True) as conn:  # written back as it was, by whoever can write the row
        revision, body = conn.execute("SELECT revision, body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()
        doc = yaml.safe_load(body)
        doc["targets"]["a"]["approvals"] = held
        conn.execute("UPDATE handoff_ledger SET body = %s WHERE name = %s", (yaml.safe_dump(doc, sort_keys=False), name))
    fresh = cli_env(XDG_STATE_HOME=str(tmp_path / "fresh"))  # only the journal can refuse
    ran = _handoff(fresh, "run", location, "a", "link", "--as", "bob")
    said = ran.stdout + ran.stderr
    assert not runs.exists(), said
    assert "approval withdrawn" in said, said
