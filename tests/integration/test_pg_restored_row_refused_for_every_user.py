"""A PostgreSQL ledger row put back to an older revision (a backup of the `handoff_ledger`
table restored, or an `UPDATE` by a role that may write it) is refused for every user, not
only for those whose per-user high-water mark saw the newer one.

What happened: alice approved `a`'s irreversible `link`, then blocked `a` for an incident.
The row was restored to the revision before the block. For alice the row "went back in
time"; for bob, the next engineer (his own state folder: his mark never saw the ledger),
`handoff check` said "ok" and `handoff resume` ran `link` on the target a person had
blocked. The history rows (`LEDGER#history`, written with every revision of the row) still
record the newer write: a row below them is now refused as a rollback whoever reads it,
until a person accepts it (`handoff check --accept-rollback`).

Real server (HANDOFF_TEST_PG), real `handoff` processes, the restore done in SQL.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import cli_env, ok
from tests.integration.test_pg_restore import drop, handoff_pg, link_and_finish, new_ledger, sql


def _ledger(tmp_path: Path) -> tuple[str, str, Path]:
    runs = tmp_path / "runs.txt"
    return (*new_ledger(link_and_finish("pg-restore-any-user", runs), "revd-restore"), runs)


def test_a_row_restored_to_before_a_block_is_refused_for_the_next_engineer_too(tmp_path: Path) -> None:
    name, location, runs = _ledger(tmp_path)
    alice = cli_env(XDG_STATE_HOME=str(tmp_path / "alice"), XDG_CACHE_HOME=str(tmp_path / "alice-cache"))
    bob = cli_env(XDG_STATE_HOME=str(tmp_path / "bob"), XDG_CACHE_HOME=str(tmp_path / "bob-cache"))
    try:
        ok(handoff_pg(alice, "approve", location, "a", "--yes", "--as", "human-1"))
        revision, body = sql("SELECT revision, body FROM handoff_ledger WHERE name = %s", name)[0]  # the backup
        ok(handoff_pg(alice, "block", location, "a", "--reason", "INCIDENT-7: do not touch a"))
        sql("UPDATE handoff_ledger SET revision = %s, body = %s WHERE name = %s", revision, body, name)  # the restore

        checked = handoff_pg(bob, "check", location)
        said = checked.stdout + checked.stderr
        assert checked.returncode != 0 and "went back in time" in said, said
        resumed = handoff_pg(bob, "resume", location)
        said = resumed.stdout + resumed.stderr
        assert not runs.exists(), f"link ran on a target a person blocked, once the row was restored: {said}"
        assert resumed.returncode != 0 and "went back in time" in said and "Traceback" not in said, said
        assert sql("SELECT body FROM handoff_ledger WHERE name = %s", name)[0][0] == body  # nothing written on it

        # A person who means it accepts the restored row: it is then written above the history's newest revision.
        ok(handoff_pg(bob, "check", location, "--accept-rollback", "--as", "human-2"))
        after = handoff_pg(bob, "check", location)
        assert "went back in time" not in after.stdout + after.stderr, after.stdout + after.stderr
    finally:
        drop(name)


def test_a_ledger_deleted_and_imported_again_is_written_above_its_history(tmp_path: Path) -> None:
    """`handoff import` of a ledger whose row was deleted (its history rows left) is an engine
    write, journaled: it takes a revision above the history's, and is no rollback."""
    name, location, _ = _ledger(tmp_path)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    try:
        ok(handoff_pg(env, "block", location, "a", "--reason", "one"))
        ok(handoff_pg(env, "unblock", location, "a", "--to", "checked", "--reason", "two"))
        exported = tmp_path / "export.yaml"
        exported.write_text(handoff_pg(env, "export", location).stdout)
        newest = sql("SELECT revision FROM handoff_ledger WHERE name = %s", name)[0][0]
        sql("DELETE FROM handoff_ledger WHERE name = %s", name)
        source = tmp_path / "fresh.yaml"
        data = yaml.safe_load(exported.read_text())
        data["revision"] = 0
        source.write_text(yaml.safe_dump(data, sort_keys=False))
        ok(handoff_pg(env, "import", source, location))
        assert sql("SELECT revision FROM handoff_ledger WHERE name = %s", name)[0][0] > newest
        ok(handoff_pg(env, "check", location))
        ok(handoff_pg(env, "block", location, "a", "--reason", "three"))
    finally:
        drop(name)
