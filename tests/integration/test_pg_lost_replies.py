"""Never twice, on PostgreSQL, when the server's answer is what gets lost: a COMMIT the server
applied whose reply never came back (`Db.run` then tries again on a new connection), and a
journal that cannot take a step's start while the fence itself still holds its lock. Real
sessions (`handoff resume` processes), the real server, real proxies (tests/integration/pg_proxy.py).

Found by a review that attacked the fence (stop 46): the step ran with no `step_start` in the
journal, and a copy of the ledger from before, imported again on another host, ran the
irreversible step a second time under the same approval; a retried write met its own change
as someone else's (an intent refused as "already in flight" and left orphaned with its approval
spent; a failed step's outcome called "cleared by someone else" and never paged); a retried
journal append wrote `step_start` twice; a fence that gave up before the spawn said the step
had "finished"."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import NamedTuple

import psycopg
import pytest
import yaml

from engine.api import open_ledger
from tests.conftest import cli_env
from tests.integration.pg_proxy import CuttingProxy, RefusingProxy, ReplyLosingProxy

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
START = b'"kind": "step_start"'  # the step_start record's INSERT (its jsonb parameter)
QUICK = 'echo started >> "$1"; sleep 0.1'


@pytest.fixture(scope="module", autouse=True)
def server_is_up():
    """PostgreSQL must be there: a missing server fails these tests, never skips them."""
    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not reachable at {PG}: {err}")


def approved_link(tmp_path: Path, port: int, link: str, state: Path) -> tuple[str, str, Path, str]:
    """A ledger whose target `a` has an approved irreversible `link` (the world file counts its
    starts): (its location through the proxy, its location direct, the world file, its text as approved)."""
    from engine.store.postgres import PostgresStore

    world = tmp_path / "world.txt"
    name = f"t-{uuid.uuid4().hex[:10]}"
    data = {"task": "lost replies", "runbook": {"steps": [
        {"name": "link", "from": "queued", "to": "linked", "reversible": False,
         "run": ["sh", "-c", link, "link", str(world)]}]}, "targets": {"a": {}}}
    direct = f"{PG}#{name}"
    PostgresStore(direct).import_text(yaml.safe_dump(data, sort_keys=False))
    approved = subprocess.run([sys.executable, "-m", "engine.cli.main", "approve", direct, "a", "--as", "human-1"],
                              capture_output=True, text=True, env=cli_env(XDG_STATE_HOME=str(state)), timeout=60,
                              stdin=subprocess.DEVNULL)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    return f"postgresql://127.0.0.1:{port}/test#{name}", direct, world, PostgresStore(direct).export_text()


def resume(location: str, tmp_path: Path, outage: str, state: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", location, "--max-minutes", "2"],
                          capture_output=True, text=True, cwd=str(tmp_path), timeout=150,
                          env=cli_env(HANDOFF_DB_OUTAGE_SECONDS=outage, PYTHONUNBUFFERED="1", XDG_STATE_HOME=str(state), **env))


def starts(world: Path) -> int:
    return world.read_text().count("started") if world.exists() else 0


def records(direct: str, kind: str) -> list[dict]:
    with psycopg.connect(PG) as conn:
        rows = conn.execute("SELECT record FROM handoff_journal WHERE ledger = %s AND record->>'kind' = %s ORDER BY seq",
                            (direct.split("#", 1)[1], kind)).fetchall()
    return [dict(r[0]) for r in rows]


class Run(NamedTuple):
    done: subprocess.CompletedProcess
    said: str  # what the session printed
    direct: str  # the ledger's location, not through the proxy
    world: Path
    approved: str  # the ledger's text as approved


def through(proxy: CuttingProxy, tmp_path: Path, *rule: bytes, outage: float, patience: str, link: str = QUICK,
            state: str = "state") -> Run:
    """One session on an approved irreversible `link`, through `proxy` armed with `rule`."""
    try:
        via_proxy, direct, world, approved = approved_link(tmp_path, proxy.port, link, tmp_path / state)
        proxy.arm(*rule, outage=outage)
        done = resume(via_proxy, tmp_path, patience, tmp_path / state)
    finally:
        proxy.down()
    said = done.stdout + done.stderr
    assert proxy.fired.is_set(), said
    return Run(done, said, direct, world, approved)


def test_a_step_start_whose_commit_reply_is_lost_is_journaled_once(tmp_path):
    run = through(ReplyLosingProxy(), tmp_path, START, b"COMMIT", outage=1.5, patience="30")
    assert starts(run.world) == 1, run.said
    assert len(records(run.direct, "step_start")) == 1, run.said
    assert run.done.returncode == 0, run.said


def test_an_irreversible_step_never_runs_without_its_step_start_in_the_journal(tmp_path):
    """The journal's connection drops at the step_start INSERT and new connections are refused
    past the session's patience, while the fence's own connection (holding the lock) stays up."""
    run = through(RefusingProxy(), tmp_path, START, outage=2, patience="1")
    assert starts(run.world) == 0 and records(run.direct, "step_start") == [], run.said
    assert "link NOT started: its start could not be journaled" in run.said, run.said


def test_nor_under_a_statement_timeout_on_a_journal_held_by_a_stalled_writer(tmp_path):
    """No proxy: every journal append times out (the server's statement_timeout, and a writer
    stalled mid-append holding the journal's lock); the fence's own transaction is fine."""
    state = tmp_path / "state"
    _, direct, world, _ = approved_link(tmp_path, 5432, QUICK, state)
    held, release = threading.Event(), threading.Event()

    def stalled_writer() -> None:
        with psycopg.connect(PG) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('handoff_journal'), hashtext(%s))", (direct.split("#", 1)[1],))
            held.set()
            release.wait(120)

    holder = threading.Thread(target=stalled_writer)
    holder.start()
    assert held.wait(10)
    try:
        done = resume(direct, tmp_path, "0.5", state, PGOPTIONS="-c statement_timeout=300")
    finally:
        release.set()
        holder.join(30)
    said = done.stdout + done.stderr
    assert starts(world) == 0 and records(direct, "step_start") == [], said


def test_a_copy_from_before_imported_on_another_host_does_not_run_link_again(tmp_path):
    """The journal is partly out at link's start. Then a person imports the ledger as it was
    when approved (an old export), and a session on another host (its own high-water marks)
    resumes: link ran at most once under the one approval."""
    first = through(RefusingProxy(), tmp_path, START, outage=2, patience="1", state="state-a")
    copy = tmp_path / "old.yaml"
    copy.write_text(first.approved)
    host_b = tmp_path / "state-b"
    imported = subprocess.run([sys.executable, "-m", "engine.cli.main", "import", str(copy), first.direct, "--replace"],
                              capture_output=True, text=True, env=cli_env(XDG_STATE_HOME=str(host_b)), timeout=60,
                              stdin=subprocess.DEVNULL)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    second = resume(first.direct, tmp_path, "30", host_b)
    assert starts(first.world) == 1, first.said + second.stdout + second.stderr
    assert len(records(first.direct, "step_start")) == 1


def test_an_intent_whose_commit_reply_is_lost_is_run_not_orphaned(tmp_path):
    """write_intent's COMMIT is applied, its reply lost: the retry finds the row as its own write
    left it, and the step runs (before, the guard met the session's own intent as "already in
    flight": link never ran, the approval was spent, the intent orphaned)."""
    run = through(ReplyLosingProxy(), tmp_path, b"in_flight", b"COMMIT", outage=1.5, patience="30")
    assert starts(run.world) == 1, run.said
    target = open_ledger(run.direct, read_only=True).load().targets["a"]
    assert target.state == "linked" and target.in_flight is None, run.said


def test_a_failed_step_whose_record_reply_is_lost_is_paged_not_called_someone_elses(tmp_path):
    run = through(ReplyLosingProxy(), tmp_path, b"ANY:" + START, b"UPDATE handoff_ledger", b"COMMIT", outage=1.5,
                  patience="30", link=QUICK + "; exit 1")
    assert starts(run.world) == 1, run.said
    target = open_ledger(run.direct, read_only=True).load().targets["a"]
    assert target.state == "failed" and target.in_flight is None, run.said
    assert records(run.direct, "discrepancy") == [], run.said
    assert records(run.direct, "page_none") + records(run.direct, "page"), run.said


def test_a_fence_that_gives_up_before_the_spawn_says_nothing_was_started(tmp_path):
    run = through(CuttingProxy(), tmp_path, b"ANY:in_flight", b"FOR UPDATE", outage=4, patience="1")
    assert starts(run.world) == 0, run.said
    assert "finished but could not be recorded" not in run.said, run.said
    assert "a: link NOT started (the ledger's database is unreachable)" in run.said, run.said
    assert run.done.returncode == 6, run.said
