"""A PostgreSQL ledger row edited in SQL is trusted no more than a hand-edited file (engine.store.outside).

- While `handoff resume` runs db-01's check, db-02 is moved in SQL from queued past its
  irreversible link (to `replicating`, whose step is reversible; to `verified`, whose step
  is irreversible). The session runs nothing on db-02, asks nobody to approve it, stops with
  exit 3 naming it, and its handoff note lists db-02 as waiting on `handoff reconcile`
  (it said "link already done" and "ready for replicate").
- A target moved in SQL is not approved by `handoff approve`: refused in one line naming it,
  what changed and `handoff reconcile`, the row (revision and text) unchanged, no approval
  journaled (it was approved, and the approval ran the cutover once a person reconciled).

Real server (HANDOFF_TEST_PG), real `handoff` processes, the edits done in SQL.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli_env, ok
from tests.integration.test_pg_restore import drop, handoff_pg, new_ledger, sql
from tests.unit.session_kit import wait_for

GATE = "import os, time\nwhile not os.path.exists({go!r}): time.sleep(0.05)"  # until the test says


def _fleet(tmp_path: Path, db_02: str = "queued") -> dict:
    touch = [sys.executable, "-c", "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"]
    ran = str(tmp_path / "RAN-{step}-{target}")
    return {"task": "pg hand edit", "owner_shift": "test-oncall", "invariants": ["never touch more than 2 dbs concurrently"],
            "runbook": {"steps": [
                {"name": "check", "from": "queued", "to": "checked", "reversible": True,
                 "run": [sys.executable, "-c", GATE.format(go=str(tmp_path / "go"))]},
                {"name": "link", "from": "checked", "to": "replicating", "run": [*touch, ran.replace("{step}", "link")]},
                {"name": "replicate", "from": "replicating", "to": "verified", "reversible": True,
                 "run": [*touch, ran.replace("{step}", "replicate")]},
                {"name": "cutover", "from": "verified", "to": "done", "run": [*touch, ran.replace("{step}", "cutover")]}]},
            # db-03, blocked mid-change, and db-01's check take both places: db-02's check cannot start.
            "targets": {"db-01": {"state": "queued"}, "db-02": {"state": db_02},
                        "db-03": {"state": "blocked", "reason": "app team", "touched_at": "2026-12-07T19:00:00Z"}}}


def _records(name: str) -> list[dict]:
    return [r for (r,) in sql("SELECT record FROM handoff_journal WHERE ledger = %s ORDER BY seq", name)]


def _edit(name: str, old: str, new: str) -> None:
    """The row's text changed in SQL (its revision left as it was), as a role that may write it would."""
    (body,) = sql("SELECT body FROM handoff_ledger WHERE name = %s", name)[0]
    assert body.count(old) == 1, body
    sql("UPDATE handoff_ledger SET body = %s WHERE name = %s", body.replace(old, new), name)


@pytest.mark.parametrize("state", ["replicating", "verified"])
def test_a_row_edited_in_sql_mid_run_is_never_acted_on(tmp_path: Path, state: str) -> None:
    """db-02 moved in SQL while db-01's check runs: exit 3, nothing on db-02, the note names its reconcile."""
    name, location = new_ledger(_fleet(tmp_path), "pg-midrun-edit")
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", location], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: any(r["kind"] == "step_start" and r.get("target") == "db-01" for r in _records(name)),
                 timeout=60, what="check to start on db-01")
        _edit(name, "  db-02:\n    state: queued\n", f"  db-02:\n    state: {state}\n")
        wait_for(lambda: any(r["kind"] == "external_edit" for r in _records(name)) or proc.poll() is not None,
                 timeout=20, what="the edit to be met by a write")
        (tmp_path / "go").touch()
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        body = sql("SELECT body FROM handoff_ledger WHERE name = %s", name)[0][0]
        records = _records(name)
        drop(name)
    assert proc.returncode == 3, out
    assert "db-02 was changed outside the engine" in out and f"handoff reconcile {shlex.quote(location)} db-02" in out, out
    assert not list(tmp_path.glob("RAN-*-db-02")), out
    assert not [r for r in records if r.get("target") == "db-02" and r["kind"] in ("step_start", "gate")]
    data = yaml.safe_load(body)
    assert data["targets"]["db-02"]["state"] == state and data["targets"]["db-02"]["changed_outside"]["fields"] == ["state"]
    note = data["handoff_note"]
    assert "- db-02 was changed outside the engine at " in note and f"(state; now {state})" in note, note
    assert f"`handoff reconcile {shlex.quote(location)} db-02 --to STATE --reason WHY`" in note, note
    assert "on db-02: irreversible" not in note and "db-02 replicating, ready for" not in note, note


def test_approve_refuses_a_row_edited_in_sql_until_it_is_reconciled(tmp_path: Path) -> None:
    """db-02 moved in SQL from queued to verified (check, link, replicate skipped): `handoff approve` of
    its cutover is refused, the row unchanged; reconciled by a person, it is approved."""
    name, location = new_ledger(_fleet(tmp_path, db_02="queued"), "pg-approve-edit")
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    try:
        ok(handoff_pg(env, "note", location, "--set", "setup"))  # the engine's own write: the row as it left it
        _edit(name, "  db-02:\n    state: queued\n", "  db-02:\n    state: verified\n")
        row = sql("SELECT revision, body FROM handoff_ledger WHERE name = %s", name)
        refused = handoff_pg(env, "approve", location, "db-02", "--step", "cutover", "--as", "alice")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        said = refused.stderr
        assert "db-02 was changed outside the engine at " in said and "(state; now verified)" in said, said
        assert f"`handoff reconcile {shlex.quote(location)} db-02 --to STATE --reason WHY`; nothing was approved" in said, said
        assert said.count("\n") == 1, said
        assert sql("SELECT revision, body FROM handoff_ledger WHERE name = %s", name) == row
        assert not [r for r in _records(name) if r["kind"] == "approval"]
        ok(handoff_pg(env, "reconcile", location, "db-02", "--to", "verified", "--reason", "cutover checked by hand",
                      "--as", "bob"))
        given = handoff_pg(env, "approve", location, "db-02", "--step", "cutover", "--as", "alice")
        assert given.returncode == 0 and "db-02: cutover approved by alice" in given.stdout, given.stdout + given.stderr
    finally:
        drop(name)
