"""A PostgreSQL ledger row changed outside the engine (an `UPDATE` of `handoff_ledger.body`
by a role that may write it, as every session's role may) is witnessed and not acted on, as
a hand edit of a file ledger is (engine.store.outside).

What happened: alice approved `a`'s irreversible `link`, then blocked `a` for an incident.
The row's text was changed in SQL to put `a` back to `checked` (its revision left as it
was). `handoff check` said "ok", the journal said nothing of it, and the next `handoff
resume` ran `link` on the target a person had blocked. Each engine write now records the
digest of the text it left in the row (in its history record); a row whose text is not the
one the engine last wrote is diffed against that write at the next engine write, the
change journaled (`external_edit`), and what no runbook step does is flagged
(`changed_outside`): the session stops before any action (exit 3), as on a file ledger.

Real server (HANDOFF_TEST_PG), real `handoff` processes, the edit done in SQL.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import cli_env, ok
from tests.integration.test_pg_restore import drop, handoff_pg, link_and_finish, new_ledger, sql


def test_a_block_taken_off_the_row_in_sql_is_journaled_and_nothing_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    name, location = new_ledger(link_and_finish("pg-hand-edit", runs), "revd-edit")
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    try:
        ok(handoff_pg(env, "approve", location, "a", "--yes", "--as", "human-1"))
        ok(handoff_pg(env, "block", location, "a", "--reason", "INCIDENT-7: do not touch a"))
        revision, body = sql("SELECT revision, body FROM handoff_ledger WHERE name = %s", name)[0]
        assert "state: blocked" in body, body
        sql("UPDATE handoff_ledger SET body = %s WHERE name = %s", body.replace("state: blocked", "state: checked"), name)

        resumed = handoff_pg(env, "resume", location)
        said = resumed.stdout + resumed.stderr
        assert not runs.exists(), f"link ran on a target a person blocked, after the row was edited in SQL: {said}"
        assert resumed.returncode == 3 and "changed outside the engine" in said and "Traceback" not in said, said

        edits = sql("SELECT record FROM handoff_journal WHERE ledger = %s AND record->>'kind' = 'external_edit'", name)
        assert len(edits) == 1 and edits[0][0]["flagged"] == ["a"], edits
        assert any(c["target"] == "a" and c["field"] == "state" for c in edits[0][0]["changes"]), edits
        # The history keeps the edited row whole: `show --at` rebuilds what the engine wrote on top of it.
        kept = sql("SELECT record FROM handoff_journal WHERE ledger = %s AND (record->>'rev')::int = %s",
                    f"{name}#history", revision + 1)
        assert kept and "full" in kept[0][0], kept
        status = handoff_pg(env, "status", location)
        assert "CHANGED OUTSIDE THE ENGINE: a" in status.stdout, status.stdout + status.stderr
    finally:
        drop(name)
