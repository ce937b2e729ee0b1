"""The PostgreSQL fence never retries a spawn: a connection cut after an irreversible
step's process has started (at the fence's own COMMIT, held back until the process
runs; at the locked read of the step's result; at that result's COMMIT) must not
re-run the check and start the process again. Only the result's record is retried; a
longer outage ends the session with the intent left for reconcile. Real sessions
(`handoff resume` processes), the real server, a real proxy."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
import yaml

from engine.api import open_ledger
from tests.conftest import cli_env
from tests.integration.pg_proxy import CuttingProxy

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
# The step: count its start in the world file, then take a little while.
# In sh, not Python: it must stay well under the 0.5 s after which a step's pid is noted (a
# transaction of its own, which the cuts below must not mistake for the result's).
LINK = 'echo started >> "$1"; sleep 0.1'
START = b'ANY:"kind": "step_start"'  # the journal line written just before the spawn
HELD = b"fence_still_held"  # the fence's last question to the server, right before the spawn


@pytest.fixture(scope="module", autouse=True)
def server_is_up():
    """PostgreSQL must be there: a missing server fails these tests, never skips them."""
    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not reachable at {PG}: {err}")


@pytest.fixture
def proxy():
    made = CuttingProxy()
    yield made
    made.down()


def _setup(tmp_path: Path, port: int) -> tuple[str, str, Path]:
    """An approved irreversible `link` on target a; (location via the proxy, direct location, world file)."""
    from engine.store.postgres import PostgresStore

    world = tmp_path / "world.txt"
    name = f"t-{uuid.uuid4().hex[:10]}"
    data = {"task": "fence-retry", "runbook": {"steps": [
        {"name": "link", "from": "queued", "to": "linked", "reversible": False,
         "run": ["sh", "-c", LINK, "link", str(world)]}]}, "targets": {"a": {}}}
    direct = f"{PG}#{name}"
    PostgresStore(direct).import_text(yaml.safe_dump(data, sort_keys=False))
    approved = subprocess.run([sys.executable, "-m", "engine.cli.main", "approve", direct, "a", "--as", "human-1"],
                              capture_output=True, text=True, env=cli_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    return f"postgresql://127.0.0.1:{port}/test#{name}", direct, world


def _resume(location: str, tmp_path: Path, outage: str) -> subprocess.CompletedProcess:
    env = cli_env(HANDOFF_DB_OUTAGE_SECONDS=outage, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", location, "--max-minutes", "2"],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)


def _starts(world: Path) -> int:
    return world.read_text().count("started") if world.exists() else 0


@pytest.mark.parametrize("where", ["at the spawn", "at the result's read", "at the result's commit"])
def test_a_cut_after_the_spawn_never_starts_the_step_again(proxy, tmp_path, where):
    """Cut for 1.5 s at the chosen point, ridden out: link started once, and recorded as done."""
    via_proxy, direct, world = _setup(tmp_path, proxy.port)
    rules = {  # the cut holds back the last named message (it never reaches the server)
        # The fence's connection: it read the row for update, the step_start went by (journaled
        # on another connection), the process was spawned, and its COMMIT is held until it runs.
        "at the spawn": ((b"FOR UPDATE", START, b"COMMIT"), world),
        "at the result's read": ((START, b"FOR UPDATE"), None),  # the first locked read after the start
        "at the result's commit": ((START, b"UPDATE handoff_ledger", b"COMMIT"), None),
    }
    patterns, marker = rules[where]
    proxy.arm(*patterns, marker=marker, outage=1.5)
    done = _resume(via_proxy, tmp_path, outage="30")
    assert proxy.fired.is_set(), "the cut never happened: the rule did not match the conversation"
    if marker is not None:
        assert proxy.marker_seen, "the cut came before the process started: it was not the fence's COMMIT"
    assert _starts(world) == 1, done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    target = open_ledger(direct, read_only=True).load().targets["a"]
    assert target.state == "linked" and target.in_flight is None


def test_a_cut_before_the_spawn_lets_the_fence_see_what_changed_meanwhile(proxy, tmp_path):
    """The fence has checked and journaled the step's start when its connection is cut, before the spawn: the
    server lets its lock go, and another writer takes the intent away meanwhile (a person's reconcile, here
    straight through the store). The fence asks its own connection once more before spawning, so it sees the
    cut, checks again on a new connection, and link never starts: it says NOT started and stops acting."""
    from engine.store.postgres import PostgresStore

    via_proxy, direct, world = _setup(tmp_path, proxy.port)
    proxy.arm(b"FOR UPDATE", START, HELD, outage=3)
    taken: list[int] = []
    ended = threading.Event()

    def take_the_intent_away() -> None:
        while not proxy.fired.wait(0.05):
            if ended.is_set():
                return  # the session ended with no cut

        def fn(ledger):
            target = ledger.targets["a"]
            assert target.in_flight is not None  # the session's intent, written before the fence
            target.in_flight, target.state, target.reason = None, "blocked", "taken over by a person"

        taken.append(PostgresStore(direct).transact(fn)[1])

    other = threading.Thread(target=take_the_intent_away)
    other.start()
    try:
        done = _resume(via_proxy, tmp_path, outage="30")
    finally:
        ended.set()
        other.join(30)
    said = done.stdout + done.stderr
    assert proxy.fired.is_set(), "the cut never happened: the fence asked nothing between the step's start and the spawn"
    assert taken, "the other writer never got the ledger while the fence's connection was cut"
    assert _starts(world) == 0, said
    assert "link NOT started" in said and "no longer holds this session's intent" in said, said
    assert "Traceback" not in said
    target = open_ledger(direct, read_only=True).load().targets["a"]
    assert target.state == "blocked" and target.in_flight is None


def test_an_outage_longer_than_patience_leaves_the_intent_for_reconcile(proxy, tmp_path):
    """Cut at the record's commit and away past the session's patience: link started once, exit 6, the intent
    stays; the next session does not start link again (an irreversible step in flight waits for a human)."""
    via_proxy, direct, world = _setup(tmp_path, proxy.port)
    proxy.arm(START, b"UPDATE handoff_ledger", b"COMMIT", outage=4)
    done = _resume(via_proxy, tmp_path, outage="1")
    assert proxy.fired.is_set()
    assert _starts(world) == 1, done.stdout + done.stderr
    assert done.returncode == 6, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    proxy.restored.wait(10)
    target = open_ledger(direct, read_only=True).load().targets["a"]
    assert target.in_flight is not None and target.state == "queued"
    again = _resume(direct, tmp_path, outage="30")
    assert _starts(world) == 1, again.stdout + again.stderr
    target = open_ledger(direct, read_only=True).load().targets["a"]
    assert target.state == "blocked" and target.in_flight is None, (target, again.stdout)


def test_a_write_that_can_wait_for_no_outage_neither_waits_nor_gives_up_for_the_others(proxy, tmp_path):
    """`transact(patient=False)` (a step's pid note) against a server out of reach fails at once and leaves the
    connection's patience to the writes that need it; a patient write waits it out and then gives up."""
    from engine.errors import HandoffError
    from engine.store.postgres import PostgresStore

    via_proxy, _direct, _world = _setup(tmp_path, proxy.port)
    store = PostgresStore(via_proxy)
    store.patience = 0.6
    store.read()
    proxy.down()
    try:
        with pytest.raises(HandoffError) as hasty:
            store.transact(lambda ledger: setattr(ledger, "owner_shift", "x"), patient=False)
        assert "cannot reach PostgreSQL" in str(hasty.value) and not store.db.gave_up
        with pytest.raises(HandoffError) as patient:
            store.transact(lambda ledger: setattr(ledger, "owner_shift", "x"))
        assert "stayed unreachable for 0.6s" in str(patient.value) and store.db.gave_up
    finally:
        proxy.up()
