"""The PostgreSQL store against the real local server: same API as the file store."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import uuid

import pytest

from engine.api import open_ledger
from engine.errors import LedgerInvalid, ReadOnly
from tests.conftest import ARTICLE

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")



def handoff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], input=stdin, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session", autouse=True)
def server_is_up():
    """PostgreSQL must be there: a missing server fails these tests, it never skips them."""
    import psycopg

    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not reachable at {PG}: {err}")


@pytest.fixture
def url(tmp_path):
    """A fresh ledger in PostgreSQL, imported from the article's YAML."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    source = tmp_path / "ledger.yaml"
    source.write_text(ARTICLE)
    location = f"{PG}#{name}"
    result = handoff("import", str(source), location)
    assert result.returncode == 0, result.stderr
    return location


def test_import_then_export_is_the_same_yaml(url):
    """The stored text is the file: export gives back what was imported, byte for byte."""
    result = handoff("export", url)
    assert result.returncode == 0
    assert result.stdout == ARTICLE


def test_cli_changes_and_journal_live_in_the_database(url):
    """pause and note go through the store's transaction and land in the journal table."""
    assert handoff("pause", url, "--reason", "error budget", "--as", "alice").returncode == 0
    assert handoff("note", url, "--set", "db-18 waits on approval", "--as", "alice").returncode == 0
    status = handoff("status", url, "--json")
    assert status.returncode == 0
    assert '"paused"' in status.stdout and "error budget" in status.stdout
    journal = handoff("journal", url).stdout
    assert "ledger paused by alice" in journal and "handoff note set by alice" in journal
    exported = handoff("export", url).stdout
    assert "revision: 2" in exported and "db-18 waits on approval" in exported


def test_concurrent_writers_lose_no_update(url):
    """Eight threads each change a different field at once; every change survives."""
    handle = open_ledger(url, actor="t")
    errors: list[BaseException] = []

    def block(name: str) -> None:
        try:
            open_ledger(url, actor=f"op-{name}").block(name, f"hold {name}")
        except BaseException as err:  # collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=block, args=(n,)) for n in ("db-17", "db-19")]
    threads += [threading.Thread(target=lambda i=i: handle.set_note(f"note {i}")) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [str(e) for e in errors] == ["db-17 is done; there is nothing left to block"]
    ledger = handle.load()
    assert ledger.targets["db-19"].state == "blocked"
    assert ledger.revision == 7  # one db-19 block + six notes, none lost


def test_missing_ledger_and_read_only(url):
    """A name not in the table is a clear error; a read-only handle writes nothing."""
    with pytest.raises(LedgerInvalid, match="no ledger named"):
        open_ledger(url + "-missing")
    observer = open_ledger(url, read_only=True)
    with pytest.raises(ReadOnly):
        observer.pause("nope")
    assert "revision" not in handoff("export", url).stdout


async def test_watch_sees_a_write_through_listen_notify(url):
    """A change by another process arrives through LISTEN/NOTIFY as a new ledger."""
    handle = open_ledger(url, read_only=True)
    stop = asyncio.Event()
    events = []

    async def consume():
        async for event in handle.watch(stop):
            events.append(event)
            stop.set()

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)  # let LISTEN start
    done = await asyncio.to_thread(handoff, "pause", url, "--reason", "from another process")
    assert done.returncode == 0
    await asyncio.wait_for(task, timeout=15)
    assert events and events[0].ledger.paused.why == "from another process"


def test_a_session_on_a_postgres_ledger_beats_in_the_database(tmp_path):
    """The lease's heartbeat lives in a table: a second session (any host) sees the first is live and exits 5."""
    import shutil
    import time

    from tests.conftest import ROOT

    fleet = tmp_path / "fleet"
    shutil.copytree(ROOT / "ledgers" / "demo", fleet, ignore=shutil.ignore_patterns("world", "*.journal.jsonl", "*.lock"))
    location = f"{PG}#t-{uuid.uuid4().hex[:10]}"
    assert handoff("import", str(fleet / "ledger.yaml"), location).returncode == 0
    env = {**os.environ, "HANDOFF_SIM_WORLD": str(tmp_path / "world"), "HANDOFF_SIM_SPEED": "1"}
    first = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", location, "--as", "one"],
                             cwd=fleet, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "session: live" not in handoff("status", location).stdout:
            time.sleep(0.2)
        assert "session: live" in handoff("status", location).stdout
        second = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", location, "--as", "two"],
                                cwd=fleet, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 5, second.stderr
        assert "another session drives this ledger" in second.stderr and "heartbeat" in second.stderr
    finally:
        handoff("stop", location)
        first.wait(timeout=60)


def test_import_over_an_existing_ledger_is_refused_unless_replace(url, tmp_path):
    """`handoff import` never silently replaces a ledger: refused without --replace; with it the revision moves forward."""
    import yaml

    assert handoff("approve", url, "db-18", "--step", "x", "--as", "alice").returncode != 0  # no runbook: nothing to approve
    assert handoff("pause", url, "--reason", "one", "--as", "alice").returncode == 0
    assert handoff("unpause", url, "--as", "alice").returncode == 0  # revision 2
    old = tmp_path / "old.yaml"
    old.write_text(ARTICLE)  # revision 0: an old copy
    refused = handoff("import", str(old), url)
    assert refused.returncode == 1 and "already exists" in refused.stderr and "--replace" in refused.stderr
    assert "revision: 2" in handoff("export", url).stdout
    replaced = handoff("import", str(old), url, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert yaml.safe_load(handoff("export", url).stdout)["revision"] == 3  # above every earlier one, never back to 0


def test_import_replace_is_refused_while_a_live_holder_has_the_lease(url, tmp_path):
    """--replace under a live session's lease (its heartbeat fresh in the database) is refused; nothing changes."""
    from engine.lease import leasing
    from engine.store.postgres import PostgresStore

    store = PostgresStore(url)
    leasing.acquire(store, url, leasing.session_lease("live-one", user="alice", planner="autopilot"))
    before = handoff("export", url).stdout
    old = tmp_path / "old.yaml"
    old.write_text(ARTICLE)
    refused = handoff("import", str(old), url, "--replace")
    assert refused.returncode == 1 and "session live-one" in refused.stderr and "handoff stop" in refused.stderr
    assert handoff("export", url).stdout == before


def test_a_writer_frozen_in_the_lock_is_named(url):
    """A transaction sitting on the ledger's lock: a writer gives up after HANDOFF_LOCK_TIMEOUT and names it."""
    import psycopg

    from engine.store.postgres import _LOCK_CLASS, split_location

    conn_url, name = split_location(url)
    with psycopg.connect(conn_url, application_name="handoff pid 777 on bastion-3 (frozen)") as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_CLASS, name))
            result = subprocess.run([sys.executable, "-m", "engine.cli.main", "pause", url, "--reason", "x"],
                                    capture_output=True, text=True, timeout=60,
                                    env={**os.environ, "HANDOFF_LOCK_TIMEOUT": "1"})
    assert result.returncode == 1, result.stderr
    assert "locked for more than 1s by handoff pid 777 on bastion-3 (frozen)" in result.stderr
    assert "paused" not in handoff("export", url).stdout.split("targets:")[0]


def test_a_write_keeps_the_human_layout_in_the_database(tmp_path):
    """Issue 8 in PostgreSQL: a pause of an imported hand-written ledger changes only `revision` and `paused`."""
    original = ("# reviewed in git\ntask: t   # the task\ntargets:\n  # first batch\n"
                "  1.10: {state: queued, checkpoint: 1.30}   # app team says wait\n  db-2:\n    state: done\n"
                "handoff_note: >\n  folded\n  note\n")
    source = tmp_path / "ledger.yaml"
    source.write_text(original)
    location = f"{PG}#t-{uuid.uuid4().hex[:10]}"
    assert handoff("import", str(source), location).returncode == 0
    assert handoff("pause", location, "--reason", "wait", "--as", "alice").returncode == 0
    exported = handoff("export", location).stdout
    before, after = original.splitlines(), exported.splitlines()
    added = [line for line in after if line not in before]
    assert [line for line in before if line not in after] == []
    assert added[:2] == ["revision: 1", "paused:"] and all(line.startswith("  ") for line in added[2:]), added
    assert open_ledger(location, read_only=True).load().targets["1.10"].checkpoint == "1.30"
