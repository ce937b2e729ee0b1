"""PostgreSQL ledger: an `os_user` approval stands only with a row of `handoff_attest` the
database says the approver's role recorded (engine.store.pg_attest). An agent with its own
OS user and its own database role, which owns no table, runs the engine's code with the
uid check patched out and approves as nob (OS user nobody): its row says the agent's role,
whatever it writes, so the person's run refuses the approval and the step never starts;
nobody's own process, connected as the role nobody, approves and the step runs. Real
forked processes with other uids, real roles on the real server.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import yaml

from tests.conftest import cli_env
from tests.integration.test_pg_restore import PG, handoff_pg
from tests.unit.test_verified_approvers import _as_uid

AGENT_ROLE = "handoff_agent_role"
TABLES = "handoff_ledger, handoff_journal, handoff_heartbeat"


def _roles() -> None:
    """The agent's role and nobody's, each able to log in, to read and write the tables and to add proofs and
    spent marks (never to change or remove one), owning none (docs/operating.md, PostgreSQL roles)."""
    with psycopg.connect(PG, autocommit=True) as conn:
        for role in (AGENT_ROLE, "nobody"):
            conn.execute(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
                         f"THEN CREATE ROLE {role} LOGIN; END IF; END $$")
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLES} TO {role}")
            conn.execute(f"REVOKE UPDATE, DELETE ON handoff_attest FROM {role}")
            conn.execute(f"GRANT SELECT, INSERT ON handoff_attest TO {role}")
            conn.execute(f"GRANT USAGE ON SEQUENCE handoff_journal_seq_seq TO {role}")


def _url(role: str, name: str) -> str:
    return PG.replace("postgresql://", f"postgresql://{role}@", 1) + f"#{name}"


def _approve(location: str, *, forged: bool) -> None:
    """In a forked child: nob's approval of db-19's link, honestly (uid nobody) or forged (the uid check patched out,
    the process saying it is nobody); the forger also writes a proof row claiming nobody recorded it."""
    from engine.api import open_ledger
    from engine.approvals import approvers

    if forged:
        approvers.uid_is = lambda user, uid=None: None  # type: ignore[assignment]
    handle = open_ledger(location, actor="nob")
    if forged:
        handle.os_user, handle.who = "nobody", type(handle.who)("nob", "nobody")
    approval = handle.approve("db-19")
    if forged:
        from engine.approvals.attest import proof_of

        proof, body = proof_of("db-19", approval)
        with psycopg.connect(location.split("#")[0], autocommit=True) as conn:
            conn.execute("INSERT INTO handoff_attest (ledger, proof, body, recorded_by) VALUES (%s, %s, %s, 'nobody') "
                         "ON CONFLICT DO NOTHING", (location.split("#")[1], proof, body.decode()))


def _engine_imported() -> None:
    """Every module `handoff run` may import, imported before a forked child drops root: a clone under a 0700
    folder (CI's) cannot be read by another uid."""
    import importlib
    import pkgutil

    import engine

    for found in pkgutil.walk_packages(engine.__path__, "engine."):
        if not found.name.startswith(("engine.temporal", "engine.langgraph", "engine.slack")):
            importlib.import_module(found.name)


def _exit_zero(argv: list[str], cwd: Path) -> None:
    """`handoff ARGV` in this (forked) process, from `cwd` (a PostgreSQL ledger's steps run where it was started)."""
    from engine.cli.main import main

    os.chdir(cwd)
    code = main(argv)
    assert code == 0, f"handoff {' '.join(argv)} exited {code}"


def _imported(tmp_path: Path, folder: Path, approvers: list) -> tuple[str, dict[str, str]]:
    """A new PostgreSQL ledger imported by root (the tables stay root's), the roles set up: db-19's irreversible
    `link` touches `folder`/spawned-db-19. (its location, root's environment)"""
    source = tmp_path / "ledger.yaml"
    source.write_text(yaml.safe_dump({
        "task": "proofs in the database", "approvers": approvers,
        "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                               "run": ["touch", f"{folder}/spawned-{{target}}"]}]},
        "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}, sort_keys=False))
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    location = f"{PG}#proofs-{uuid.uuid4().hex[:10]}"
    imported = handoff_pg(env, "import", source, location)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    _roles()
    return location, env


def test_an_os_user_approval_forged_by_another_role_never_authorises(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="pg-attest-"))  # the step's marker: outside pytest's 0700 tree
    try:
        folder.chmod(0o777)
        location, env = _imported(tmp_path, folder, [{"name": "nob", "os_user": "nobody"}])
        name = location.split("#", 1)[1]
        with psycopg.connect(PG):  # the driver's modules, imported while root (the clone may sit in a 0700 folder)
            pass

        assert _as_uid(1, lambda: _approve(_url(AGENT_ROLE, name), forged=True)) == 0
        with psycopg.connect(PG, autocommit=True) as conn:
            body = conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0]
            recorded = {r[0] for r in conn.execute("SELECT recorded_by FROM handoff_attest WHERE ledger = %s", (name,))}
        [approval] = yaml.safe_load(body)["targets"]["db-19"]["approvals"]
        assert (approval["by"], approval["user"], approval["verified"]) == ("nob", "nobody", "os_user")
        assert recorded == {AGENT_ROLE}  # what it wrote as nobody's row says who wrote it
        forged = handoff_pg(env, "run", f"{PG}#{name}", "db-19", "link")
        assert forged.returncode == 1, forged.stdout + forged.stderr
        assert (f"no row of handoff_attest recorded by the database role nobody proves this approval (only by "
                f"{AGENT_ROLE})") in forged.stdout, forged.stdout
        assert not (folder / "spawned-db-19").exists()

        assert _as_uid(65534, lambda: _approve(_url("nobody", name), forged=False)) == 0
        # The agent runs the step with nob's own approval, connected as its role, which owns no table.
        os.environ["XDG_STATE_HOME"] = str(folder / "agent-state")  # the child's: its own marks, where it may write
        _engine_imported()
        try:
            assert _as_uid(1, lambda: _exit_zero(["run", _url(AGENT_ROLE, name), "db-19", "link"], folder)) == 0
        finally:
            os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
        assert (folder / "spawned-db-19").exists()

        # The next engineer's turn: the agent clears the approval's use and deletes the step's start from the
        # journal (its role may write both tables); the spent mark its own session left is not its to remove.
        def hide() -> None:
            from engine.api import open_ledger

            def clear(led) -> None:
                t = led.targets["db-19"]
                t.approvals[0].used_at = t.approvals[0].used_by = None
                t.state, t.evidence, t.touched_at, t.reason, t.last_action = "checked", None, None, None, None
            open_ledger(_url(AGENT_ROLE, name), actor="agent").store.transact(clear)
            with psycopg.connect(_url(AGENT_ROLE, name).split("#")[0], autocommit=True) as conn:
                conn.execute("DELETE FROM handoff_journal WHERE ledger = %s AND record->>'kind' = 'step_start'", (name,))
                try:
                    conn.execute("DELETE FROM handoff_attest WHERE ledger = %s", (name,))
                except psycopg.errors.InsufficientPrivilege:
                    return
            raise AssertionError("the agent's role removed a spent mark")
        (folder / "spawned-db-19").unlink()
        assert _as_uid(1, hide) == 0
        again = handoff_pg(cli_env(XDG_STATE_HOME=str(tmp_path / "next-engineer")), "run", f"{PG}#{name}", "db-19", "link")
        said = again.stdout + again.stderr
        assert not (folder / "spawned-db-19").exists(), said
        assert f"a spent mark of the database role {AGENT_ROLE}'s" in said and "never run twice" in said, said
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_without_its_trigger_the_table_of_proofs_proves_nothing(tmp_path: Path) -> None:
    """A table whose trigger was turned off (by its owner) could hold rows naming anyone: every proof is refused,
    saying how to mend it. Put back, root's own approval (as root's role) runs."""
    location, env = _imported(tmp_path, tmp_path, [{"name": "op", "os_user": "root"}])
    assert handoff_pg(env, "approve", location, "db-19", "--yes", "--as", "op").returncode == 0
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute("ALTER TABLE handoff_attest DISABLE TRIGGER handoff_attest_by")
    try:
        refused = handoff_pg(env, "run", location, "db-19", "link")
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute("ALTER TABLE handoff_attest ENABLE TRIGGER handoff_attest_by")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "no longer has only its own trigger setting who recorded each row" in refused.stdout, refused.stdout
    assert not (tmp_path / "spawned-db-19").exists()
    assert handoff_pg(env, "approve", location, "db-19", "--yes", "--as", "op").returncode == 0
    ran = handoff_pg(env, "run", location, "db-19", "link")
    assert ran.returncode == 0 and (tmp_path / "spawned-db-19").exists(), ran.stdout + ran.stderr
    assert os.path.exists(tmp_path / "spawned-db-19")


def test_an_approval_its_approver_withdrew_never_runs_for_the_next_engineer(tmp_path: Path) -> None:
    """nob (OS user nobody, its own role) approves, then withdraws it. The agent, as its role, writes the approval back
    into the row and deletes the withdrawal's journal records; the row that says it was withdrawn, recorded by role
    nobody, is not its to remove. The next engineer's run (marks of their own) refuses it: nothing ran."""
    folder = Path(tempfile.mkdtemp(prefix="pg-withdrawn-"))
    try:
        folder.chmod(0o777)
        location, env = _imported(tmp_path, folder, [{"name": "nob", "os_user": "nobody"}])
        name = location.split("#", 1)[1]
        with psycopg.connect(PG):
            pass
        _engine_imported()

        def approve_then_withdraw() -> None:
            from engine.api import open_ledger

            handle = open_ledger(_url("nobody", name), actor="nob")
            handle.approve("db-19")
            handle.unapprove("db-19")
        os.environ["XDG_STATE_HOME"] = str(folder / "nobody-state")
        try:
            assert _as_uid(65534, approve_then_withdraw) == 0
        finally:
            os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
        with psycopg.connect(PG, autocommit=True) as conn:
            [approval] = [r[0]["approval"] if "approval" in r[0] else r[0] for r in conn.execute(
                "SELECT record FROM handoff_journal WHERE ledger = %s AND record->>'kind' = 'approval'", (name,))]

        def put_back() -> None:
            from engine.api import open_ledger
            from engine.ledger.model import Approval

            entry = {"by": approval["actor"], "user": approval["user"], "at": approval["at"], "step": approval["step"],
                     "hash": approval["hash"], "checkpoint": approval.get("checkpoint"), "verified": approval.get("verified")}
            open_ledger(_url(AGENT_ROLE, name), actor="agent").store.transact(
                lambda led: led.targets["db-19"].approvals.append(Approval.model_validate(entry)))
            with psycopg.connect(PG.replace("postgresql://", f"postgresql://{AGENT_ROLE}@", 1), autocommit=True) as conn:
                conn.execute("DELETE FROM handoff_journal WHERE ledger = %s AND record->>'kind' LIKE 'unapproval%%'", (name,))
        assert _as_uid(1, put_back) == 0
        ran = handoff_pg(cli_env(XDG_STATE_HOME=str(tmp_path / "next-engineer")), "run", f"{PG}#{name}", "db-19", "link")
        said = ran.stdout + ran.stderr
        assert not (folder / "spawned-db-19").exists(), said
        assert "approval withdrawn" in said and "a mark of the database role nobody's that it was withdrawn" in said, said
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_withdrawal_of_a_changed_copy_still_withdraws_the_real_one(tmp_path: Path) -> None:
    """(review helper) As the agent's role, the approval's hash is changed in the row just before the person's
    `handoff unapprove`; the real approval is written back after it. The withdrawal covered every approval of the
    target given before it (a row of root's role): the next engineer's run refuses the real one."""
    folder = Path(tempfile.mkdtemp(prefix="pg-changed-"))
    try:
        folder.chmod(0o777)
        location, env = _imported(tmp_path, folder, ["root"])
        name = location.split("#", 1)[1]
        assert handoff_pg(env, "approve", location, "db-19", "--yes").returncode == 0
        from engine.api import open_ledger
        from engine.ledger.model import Approval

        real = open_ledger(location, read_only=True).load().targets["db-19"].approvals[0].model_dump(exclude_none=True)
        agent = open_ledger(_url(AGENT_ROLE, name), actor="agent")

        def tamper(led) -> None:
            led.targets["db-19"].approvals[0].hash += "0"
        agent.store.transact(tamper)
        time.sleep(1.1)  # the withdrawal is after the approval, to the second
        assert handoff_pg(env, "unapprove", location, "db-19").returncode == 0

        def put_back(led) -> None:
            led.targets["db-19"].approvals = [Approval.model_validate(real)]
        agent.store.transact(put_back)
        ran = handoff_pg(cli_env(XDG_STATE_HOME=str(tmp_path / "next-engineer")), "run", location, "db-19", "link")
        said = ran.stdout + ran.stderr
        assert not (folder / "spawned-db-19").exists(), said
        assert "approvals of link on db-19 given before" in said and "a row of the database role root's" in said, said
    finally:
        shutil.rmtree(folder, ignore_errors=True)
