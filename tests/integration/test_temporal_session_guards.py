"""Review attack: the guards a built-in session applies around its loop, asked of the Temporal
runtime. A real `temporal server start-dev`, real `handoff worker` processes, kill -9, the
demo simulator's world; each case was first run against `handoff resume --wait` on the same
ledger, which holds (as tests/integration/test_langgraph_session_guards.py does for LangGraph).

- An approval policy's `expire_after` while the workflow waits on the approval: a waiting
  session tends the request (engine.session.tending) and blocks the target when it expires,
  so a late `handoff approve` is refused and the irreversible step never runs. The workflow's
  decision must tend it too: a request that expired is never approved into a run.
- A target changed outside the engine (a hand edit to a state no runbook step makes) before
  the workflow starts: a session says so and stops before any action, exit 3
  (engine.session.untrusted). The workflow must not gate or run the next irreversible step
  on it as if the edit were progress. Nor when the edit lands while the workflow runs a
  step: it runs nothing on the edited target and stops, exit 3, naming it; with the ledger paused
  at the same time, a hand edit outranks the pause (exit 3, as in a session and a LangGraph run);
  and when only the closing note's write meets the edit (the running target's intent removed
  and the target marked done by hand), it is said after the note, exit 3, not 0.
- A target deleted from the file by hand while its step runs: every write after it is refused
  (the ledger shrank). A session says so and exits 2; the workflow tried its note again every
  10 s for ever, holding the lease, the reason only in the worker's log.
- `handoff approve` after the only worker was killed (kill -9 while the workflow waited on
  the approval): the workflow still runs on the server and takes the signal, but no worker
  runs it. The approval must not tell the person that the workflow "looks again within a
  second"; it says no worker runs it, and what to start. `handoff status` (and the TUI
  header, the same lease state) must not show it live "on 1 worker" without saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from guards_kit import (  # noqa: E402
    EXPIRY,
    ONE,
    expires_then_refuses,
    finish_the_only_target_by_hand,
    gated_fleet,
    hand_edit_db19,
    move_the_other_on_and_pause,
    move_the_other_on_mid_run,
    never_linked,
    refused_as_a_session,
    remove_the_running_target,
    said_after_the_note,
    stopped_before_any_action,
    stopped_on_the_mid_run_edit,
)
from session_kit import counts, demo_copy, journal, load, wait_for  # noqa: E402
from temporal_kit import Server, Workers, handoff_proc, handoff_run, queue  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("temporal-guards"))
    yield s
    s.stop()


def _resume(ledger: Path, server: Server, q: str, world: Path, *extra: str, **env: str):
    return handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                       "--task-queue", q, *extra, world=world, timeout=120, **env)


def _hand_off(ledger: Path, world: Path) -> None:
    if load(ledger).get("session") is not None:
        handoff_run("stop", str(ledger), world=world)
        wait_for(lambda: load(ledger).get("session") is None, 60, "the workflow to hand off")


def _beat_age(ledger: Path) -> float:
    from engine.api import open_ledger

    return float((open_ledger(str(ledger)).store.heartbeat().current() or {}).get("age") or 0.0)


def test_an_approval_request_that_expired_while_the_workflow_waits_never_runs(tmp_path: Path, server: Server) -> None:
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}}, approval_policy=EXPIRY)
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    try:
        started = _resume(ledger, server, q, world, HANDOFF_TEMPORAL_IDLE="0.5")  # the idle timer: a decision every 0.5 s
        assert started.returncode == 0, started.stdout + started.stderr
        expires_then_refuses(ledger, lambda *args: handoff_run(*args, world=world))
        wait_for(lambda: load(ledger).get("session") is None, 60, "the workflow to hand off (only people can move it)")
    finally:
        _hand_off(ledger, world)
        workers.stop()
    never_linked(ledger, world)


def test_a_target_changed_outside_the_engine_stops_the_workflow_before_any_action(tmp_path: Path, server: Server) -> None:
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}, "db-21": {"state": "queued"}})
    world, q = tmp_path / "world", queue()
    hand_edit_db19(ledger, lambda *args: handoff_run(*args, world=world))
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    follow = handoff_proc("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                          "--task-queue", q, "--follow", world=world)
    try:
        out, err = follow.communicate(timeout=45)
    except subprocess.TimeoutExpired:  # it went on to act, then waits on approvals
        _hand_off(ledger, world)
        out, err = follow.communicate(timeout=60)
    finally:
        workers.stop()
    stopped_before_any_action(ledger, follow.returncode, out, err)


def test_a_target_moved_on_by_hand_while_the_workflow_steps_stops_it(tmp_path: Path, server: Server) -> None:
    ledger = gated_fleet(tmp_path)
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    follow = handoff_proc("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                          "--task-queue", q, "--follow", world=world)
    try:
        moved = move_the_other_on_mid_run(ledger, lambda: follow.poll() is None)
        out, err = follow.communicate(timeout=45)
    except subprocess.TimeoutExpired:  # it went on, then waits on approvals
        _hand_off(ledger, world)
        out, err = follow.communicate(timeout=60)
    finally:
        (tmp_path / "go").touch()
        workers.stop()
    stopped_on_the_mid_run_edit(ledger, moved, follow.returncode, out, err)


def _follow(ledger: Path, server: Server, q: str, world: Path):
    return handoff_proc("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                        "--task-queue", q, "--follow", world=world)


def test_a_hand_edit_and_a_pause_together_mid_run_end_the_workflow_3(tmp_path: Path, server: Server) -> None:
    """The other queued target is moved on by hand, then the ledger is paused: the workflow says the
    edit and ends 3, as a session and a LangGraph run do (a pause alone leaves it waiting)."""
    ledger = gated_fleet(tmp_path)
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    follow = _follow(ledger, server, q, world)
    try:
        moved = move_the_other_on_and_pause(ledger, lambda *args: handoff_run(*args, world=world))
        out, err = follow.communicate(timeout=45)
    except subprocess.TimeoutExpired:  # it waits on the pause
        _hand_off(ledger, world)
        out, err = follow.communicate(timeout=60)
    finally:
        (tmp_path / "go").touch()
        workers.stop()
    stopped_on_the_mid_run_edit(ledger, moved, follow.returncode, out, err)


def test_a_hand_edit_only_the_closing_note_meets_ends_the_workflow_3(tmp_path: Path, server: Server) -> None:
    """db-01's check runs; its intent is removed and it is marked done by hand. The workflow names
    db-01 and `handoff reconcile` after its note and ends 3 (it ended "nothing left to do", exit 0)."""
    ledger = gated_fleet(tmp_path, ONE)
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    follow = _follow(ledger, server, q, world)
    try:
        finish_the_only_target_by_hand(ledger)
        out, err = follow.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        _hand_off(ledger, world)
        out, err = follow.communicate(timeout=60)
    finally:
        (tmp_path / "go").touch()
        workers.stop()
    said_after_the_note(ledger, follow.returncode, out, err)


def test_an_approval_after_the_only_worker_was_killed_does_not_claim_it_looks_again(tmp_path: Path, server: Server) -> None:
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "checked"}})
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    worker = workers.start()
    try:
        started = _resume(ledger, server, q, world)
        assert started.returncode == 0, started.stdout + started.stderr
        wid = f"handoff-{load(ledger)['id']}"
        wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval", 60, "db-19 to ask for link")
        wait_for(lambda: any(r.get("kind") == "waiting" for r in journal(ledger)), 60, "the workflow to wait")
        os.kill(worker.pid, signal.SIGKILL)  # the only worker is gone; the workflow runs on at the server
        worker.wait(10)
        assert load(ledger)["session"]["runtime"] == "temporal"
        # A person comes to approve later: by then the keeper's beat is late (3 s here; a live keeper beats every 0.75 s).
        wait_for(lambda: _beat_age(ledger) > 4, 30, "the lease keeper's beat to be late")
        status = handoff_run("status", str(ledger), world=world).stdout
        assert "its lease keeper is late: no worker runs it now" in status, status  # not "live ..., on 1 worker" alone
        assert f"handoff worker --temporal {server.address} --task-queue {q}" in status, status
        approved = handoff_run("approve", str(ledger), "db-19", "--yes", "--as", "human-oncall", world=world)
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert "looks again within a second" not in approved.stderr, approved.stderr
        assert f"no worker runs temporal workflow {wid} now" in approved.stderr, approved.stderr
        assert f"handoff worker --temporal {server.address} --task-queue {q}" in approved.stderr, approved.stderr
        assert load(ledger)["targets"]["db-19"]["state"] == "checked"  # true: nothing ran it
        assert not [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "link"]
        # A worker started again picks the workflow up: the approval is acted on, once.
        workers.start()
        wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] not in ("checked", "awaiting_approval"), 90,
                 "the new worker to run link")
    finally:
        if not workers.alive():  # a failure above: a worker to hand off with
            workers.start()
        _hand_off(ledger, world)
        workers.stop()
    assert counts(world)["db-19"]["link_runs"] == 1, counts(world)


def test_a_target_deleted_by_hand_while_it_steps_ends_the_workflow_2(tmp_path: Path, server: Server) -> None:
    """The target whose check runs is deleted from the file by hand: the workflow says why it cannot
    go on and ends 2, as a session does (its note was tried again every 10 s, for ever)."""
    ledger = gated_fleet(tmp_path)
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    follow = _follow(ledger, server, q, world)
    try:
        removed = remove_the_running_target(ledger)
        out, err = follow.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        os.killpg(follow.pid, signal.SIGKILL)
        out, err = follow.communicate()
    finally:
        (tmp_path / "go").touch()
        workers.stop()
    refused_as_a_session(removed, follow.returncode, out, err)
