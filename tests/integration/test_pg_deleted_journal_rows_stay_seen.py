"""A PostgreSQL ledger's journal rows deleted (the agent's role may DELETE on
`handoff_journal`, docs/operating.md "PostgreSQL roles"), all of them or those at its end,
leave a trace that the next engine write does not wipe out. `handoff check` saw the cut only
until then (from the ledger row's revision and the `LEDGER#history` rows): the next write
(any `handoff` command that changes the ledger, `handoff note`) chained on to what was left,
and from then on `check` said "ok", `journal --verify` "chain ok" and `report` "no record
missing: yes", the irreversible run of the deleted rows gone without a word. Each write's
history record now names the journal's newest row, and the next write notes a `chain_break`
when that row is gone, as the file journal does with its last-write record's head.

Real server (HANDOFF_TEST_PG), real `handoff` processes, `DELETE` as the agent's role would.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import cli_env, ok
from tests.integration.test_pg_restore import drop, handoff_pg, new_ledger, sql

LEDGER = {"task": "pg-erase", "owner_shift": "test-oncall",
          "targets": {"a": {"state": "checked"}, "b": {"state": "checked"}},
          "runbook": {"steps": [{"name": "link", "from": "checked", "to": "linked", "reversible": False, "run": ["true"]},
                                {"name": "finish", "from": "linked", "to": "done", "reversible": True,
                                 "run": ["sleep", "0.7"]}]}}


def _ledger(tmp_path: Path) -> tuple[str, str, dict]:
    return (*new_ledger(LEDGER, "revd-erase"),
            cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache")))


def test_the_next_write_after_the_journal_rows_are_deleted_keeps_the_erasure_seen(tmp_path: Path) -> None:
    name, location, env = _ledger(tmp_path)
    try:
        ok(handoff_pg(env, "approve", location, "a", "--yes", "--as", "human-1"))
        ok(handoff_pg(env, "run", location, "a"))
        sql("DELETE FROM handoff_journal WHERE ledger = %s", name)
        before = handoff_pg(env, "journal", location, "--verify")
        assert before.returncode == 1 and "erased" in before.stdout + before.stderr, before.stdout + before.stderr

        ok(handoff_pg(env, "note", location, "--set", "all quiet", "--as", "bob"))  # the next write, by anyone

        verified = handoff_pg(env, "journal", location, "--verify")
        said = verified.stdout + verified.stderr
        assert verified.returncode == 1 and "erased" in said, said
        checked = handoff_pg(env, "check", location)
        said = checked.stdout + checked.stderr
        assert checked.returncode == 1 and "journal chain broken" in said and "erased" in said, said
    finally:
        drop(name)


def test_an_irreversible_run_cut_off_the_journals_end_stays_seen_after_the_next_write(tmp_path: Path) -> None:
    name, location, env = _ledger(tmp_path)
    try:
        ok(handoff_pg(env, "approve", location, "a", "--yes", "--as", "human-1"))
        ok(handoff_pg(env, "run", location, "a"))
        start = sql("SELECT min(seq) FROM handoff_journal WHERE ledger = %s AND record->>'kind' = 'step_start'", name)[0][0]
        sql("DELETE FROM handoff_journal WHERE ledger = %s AND seq >= %s", name, start)  # the run's rows
        before = handoff_pg(env, "check", location)
        assert before.returncode == 1 and "cut off the journal's end" in before.stdout, before.stdout + before.stderr

        ok(handoff_pg(env, "note", location, "--set", "all quiet", "--as", "bob"))  # the next write

        checked = handoff_pg(env, "check", location)
        said = checked.stdout + checked.stderr
        assert checked.returncode == 1 and "journal chain broken" in said and "deleted from the journal" in said, said
        report = handoff_pg(env, "report", location)
        assert report.returncode == 1 and "no record missing: yes" not in report.stdout, report.stdout + report.stderr
    finally:
        drop(name)


def test_a_line_of_no_revision_first_does_not_hide_the_erasure(tmp_path: Path) -> None:
    """A record that names no write appended first into the emptied journal: the next write
    still notes the erasure."""
    from engine.api import open_ledger

    name, location, env = _ledger(tmp_path)
    try:
        ok(handoff_pg(env, "block", location, "a", "--reason", "one"))
        sql("DELETE FROM handoff_journal WHERE ledger = %s", name)
        open_ledger(location, actor="agent").journal.append("log", "nothing to see", actor="agent")
        ok(handoff_pg(env, "unblock", location, "a", "--to", "checked", "--reason", "two"))
        verified = handoff_pg(env, "journal", location, "--verify")
        assert verified.returncode == 1 and "erased" in verified.stdout + verified.stderr, verified.stdout + verified.stderr
    finally:
        drop(name)


def test_a_fresh_ledger_and_its_first_writes_are_no_erasure(tmp_path: Path) -> None:
    """The control: an import, a replace, a session and the writes after them note no break."""
    name, location, env = _ledger(tmp_path)
    source = tmp_path / "ledger.yaml"
    source.write_text(yaml.safe_dump(LEDGER, sort_keys=False))
    try:
        ok(handoff_pg(env, "block", location, "a", "--reason", "one"))
        ok(handoff_pg(env, "import", source, location, "--replace"))
        ok(handoff_pg(env, "block", location, "b", "--reason", "two"))
        ok(handoff_pg(env, "approve", location, "a", "--yes", "--as", "human-1"))
        ok(handoff_pg(env, "resume", location))  # a session: its steps, and the pid notes between them
        ok(handoff_pg(env, "journal", location, "--verify"))
        kinds = [r[0] for r in sql("SELECT record->>'kind' FROM handoff_journal WHERE ledger = %s ORDER BY seq", name)]
        assert "chain_break" not in kinds, kinds
    finally:
        drop(name)
