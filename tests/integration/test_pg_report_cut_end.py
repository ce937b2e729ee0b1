"""The auditor's report on a PostgreSQL ledger: journal rows cut off the end are a break, as
in a file journal (review `web`, finding 4). Against the local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import yaml

from tests.conftest import cli_env
from tests.integration.test_pg_restore import drop, new_ledger

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
# One irreversible step on one target: the run whose journal rows are cut.
CUT = {"task": "pg-cut", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
    {"name": "link", "from": "checked", "to": "linked", "reversible": False, "run": ["true"]}]}}


def _handoff(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=90, stdin=subprocess.DEVNULL)


def test_a_postgres_journal_cut_at_its_end_is_not_reported_complete(tmp_path: Path) -> None:
    """Promise (docs/operating.md "For auditors"): the report gives "proof that no journal record
    is missing" and exits 1 on a break; "the journal cut short or erased" is a break (the file
    journal checks its end against the ledger's last write since commit 8e98cdd).

    What happens on a PostgreSQL ledger: an irreversible `link` ran (one report row, complete);
    the journal rows from its `step_start` on are deleted (what someone hiding the run would
    do). The report then has no row, says "chain verified: yes", "no record missing: yes" and
    exits 0, though the ledger row's revision and the history rows (`LEDGER#history`) both still
    name the writes whose records are gone: PostgresStore.last_write() is None (no head to
    check) and PgJournal has no highest_revision, so engine/checks/chain.py:_unjournaled and
    _behind_history both return None for it."""
    name, location = new_ledger(CUT, prefix="rv")
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    try:
        assert _handoff(env, "approve", location, "a", "--yes", "--as", "human-1").returncode == 0
        ran = _handoff(env, "run", location, "a")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        before = _handoff(env, "report", location, "--format", "json")
        assert before.returncode == 0 and [r["target"] for r in json.loads(before.stdout)["rows"]] == ["a"], before.stdout

        with psycopg.connect(PG, autocommit=True) as conn:
            start = conn.execute("SELECT min(seq) FROM handoff_journal WHERE ledger = %s AND record->>'kind' = 'step_start'",
                                 (name,)).fetchone()[0]
            cut = conn.execute("DELETE FROM handoff_journal WHERE ledger = %s AND seq >= %s", (name, start)).rowcount
        assert cut >= 2

        after = _handoff(env, "report", location, "--format", "json")
        proof = json.loads(after.stdout)["proof"]
        assert not (after.returncode == 0 and proof["chain_verified"] and not proof["gaps"]), (
            f"{cut} journal rows cut off the end (the irreversible run's start, end and transition) and the report "
            f"has {len(json.loads(after.stdout)['rows'])} rows and says complete: {proof}")
    finally:
        drop(name)


def _pg_ledger(tmp_path: Path) -> tuple[str, str, dict]:
    """A fresh PostgreSQL ledger name, its location and the environment (the caller deletes its rows)."""
    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        raise AssertionError(f"PostgreSQL is not reachable at {PG}: {err}") from None
    name = f"rv-{uuid.uuid4().hex[:10]}"
    return name, f"{PG}#{name}", cli_env(XDG_STATE_HOME=str(tmp_path / "state"))


def test_a_postgres_journal_and_history_cut_together_are_caught_by_the_ledger_rows_revision(tmp_path: Path) -> None:
    """The history rows of the lost writes cut off with the journal's: the ledger row's revision
    still names the write whose records are gone (PostgresStore.last_write), so the report is
    not complete."""
    name, location = new_ledger(CUT, prefix="rv")
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    try:
        assert _handoff(env, "approve", location, "a", "--yes", "--as", "human-1").returncode == 0
        assert _handoff(env, "run", location, "a").returncode == 0
        with psycopg.connect(PG, autocommit=True) as conn:
            start = conn.execute("SELECT min(seq) FROM handoff_journal WHERE ledger = %s AND record->>'kind' = 'step_start'",
                                 (name,)).fetchone()[0]
            conn.execute("DELETE FROM handoff_journal WHERE ledger = %s AND seq >= %s", (name, start))
            kept = conn.execute("SELECT max((record->>'rev')::int) FROM handoff_journal WHERE ledger = %s", (name,)).fetchone()[0]
            # The history rows of every later write too: only the ledger row still names them.
            conn.execute("DELETE FROM handoff_journal WHERE ledger = %s AND (record->>'rev')::int > %s", (f"{name}#history", kept))
        after = _handoff(env, "report", location, "--format", "json")
        proof = json.loads(after.stdout)["proof"]
        assert after.returncode == 1 and not proof["chain_verified"], proof
        assert "cut off the journal's end" in proof["breaks"][0]["why"], proof
    finally:
        drop(name)


def test_a_postgres_ledger_just_imported_or_replaced_has_a_whole_journal(tmp_path: Path) -> None:
    """`handoff import` is an engine write: it journals an `import` record with its revision,
    so neither a fresh import nor `--replace` over a used ledger reads as a journal erased or
    cut short (`journal --verify`, `report`)."""
    name, location, env = _pg_ledger(tmp_path)
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump({"task": "pg-import", "revision": 7, "targets": {"a": {"state": "checked"}},
                                      "runbook": {"steps": [{"name": "link", "from": "checked", "to": "linked",
                                                             "run": ["true"]}]}}, sort_keys=False))
    try:
        for args in (("import", ledger, location), ("journal", location, "--verify"), ("report", location),
                     ("approve", location, "a", "--yes", "--as", "human-1"), ("import", ledger, location, "--replace"),
                     ("journal", location, "--verify"), ("report", location)):
            done = _handoff(env, *args)
            assert done.returncode == 0, f"handoff {args[0]}: {done.stdout}{done.stderr}"
        with psycopg.connect(PG, autocommit=True) as conn:
            kinds = [r[0] for r in conn.execute("SELECT record->>'kind' FROM handoff_journal WHERE ledger = %s ORDER BY seq",
                                                (name,))]
        assert kinds == ["import", "approval", "import"], kinds
    finally:
        drop(name)
