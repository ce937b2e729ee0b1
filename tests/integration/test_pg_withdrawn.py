"""PostgreSQL ledger: a withdrawn approval written back into the row never runs."""

from __future__ import annotations

from pathlib import Path

import psycopg
import yaml

from tests.conftest import cli_env
from tests.integration.test_pg_restore import PG, approved_link, handoff_pg


def test_a_withdrawn_approval_written_back_into_the_row_never_runs(tmp_path: Path):
    name, location, runs, env = approved_link(tmp_path, "pg-withdrawn")
    with psycopg.connect(PG, autocommit=True) as conn:
        held = yaml.safe_load(conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0])
    held = held["targets"]["a"]["approvals"]
    assert handoff_pg(env, "unapprove", location, "a", "--as", "human-1").returncode == 0
    with psycopg.connect(PG, autocommit=True) as conn:  # written back as it was, by whoever can write the row
        body = conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0]
        doc = yaml.safe_load(body)
        doc["targets"]["a"]["approvals"] = held
        conn.execute("UPDATE handoff_ledger SET body = %s WHERE name = %s", (yaml.safe_dump(doc, sort_keys=False), name))
    fresh = cli_env(XDG_STATE_HOME=str(tmp_path / "fresh"))  # only the journal can refuse
    ran = handoff_pg(fresh, "run", location, "a", "link", "--as", "bob")
    said = ran.stdout + ran.stderr
    assert not runs.exists(), said
    assert "changed outside the engine" in said, said  # the row's edit is seen first, and flagged
    # A person accepts the edited row as it is: the approval it revived is still withdrawn.
    accepted = handoff_pg(fresh, "reconcile", location, "a", "--to", "checked", "--reason", "looked", "--as", "bob")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    ran = handoff_pg(fresh, "run", location, "a", "link", "--as", "bob")
    said = ran.stdout + ran.stderr
    assert not runs.exists(), said
    assert "approval withdrawn" in said, said
