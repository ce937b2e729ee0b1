"""Review attack: the guards a built-in session applies around its loop, asked of the LangGraph
runtime. Real `handoff resume --runtime langgraph` processes, the real PostgreSQL checkpointer,
the demo simulator's world; each case was first run against `handoff resume --wait` on the
same ledger, which holds.

- An approval policy's `expire_after` while the thread waits on the interrupt: a waiting
  session tends the request (engine.session.tending) and blocks the target when it expires,
  so a late `handoff approve` is refused and the irreversible step never runs. The runtime
  must tend it too: a request that expired is never approved into a run.
- A target changed outside the engine (a hand edit to a state no runbook step makes) before
  the runtime starts: a session says so and stops before any action, exit 3
  (engine.session.untrusted). The runtime must not gate or run the next irreversible step
  on it as if the edit were progress. Nor when the edit lands while the runtime runs a step:
  it runs nothing on the edited target and stops, exit 3, naming it; with the ledger paused at
  the same time, a hand edit outranks the pause (exit 3, as in a session and a workflow, not 4);
  and when only the closing note's write meets the edit (the running target's intent removed
  and the target marked done by hand), it is said after the note, exit 3, not 0.
- A target deleted from the file by hand while its step runs: every write after it is refused
  (the ledger shrank). A session says so and exits 2; the runtime exited 1, the error unsaid
  in its output and no end line.
- `handoff approve` after the runtime was killed (kill -9 while it waited on the approval):
  the lease is left behind, but nobody watches the ledger. The approval must not tell the
  person that "the LangGraph runtime resumes thread ..." (the step would wait, unseen, for a
  runtime nobody runs); it says nothing resumes it until a runtime runs again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

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
from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import ROOT, demo_copy, env, handoff, journal, load, wait_for  # noqa: E402


def _runtime(ledger: Path, url: str, world: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--runtime",
                             "langgraph", "--checkpointer", url], env=env(world), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT))


def _end(proc: subprocess.Popen, ledger: Path, world: Path) -> tuple[str, str]:
    if proc.poll() is None:
        handoff("stop", str(ledger), world=world)
    try:
        return proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def test_an_approval_request_that_expired_while_the_thread_waits_never_runs(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}}, approval_policy=EXPIRY)
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        expires_then_refuses(ledger, lambda *args: handoff(*args, world=world))
    finally:
        out, err = _end(proc, ledger, world)
    never_linked(ledger, world)
    assert proc.returncode == 0, out + err
    assert load(ledger).get("session") is None


def test_a_target_changed_outside_the_engine_stops_the_run_before_any_action(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}, "db-21": {"state": "queued"}})
    world = tmp_path / "world"
    hand_edit_db19(ledger, lambda *args: handoff(*args, world=world))
    proc = _runtime(ledger, url, world)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # it went on to act, then waits on approvals
        out, err = _end(proc, ledger, world)
    stopped_before_any_action(ledger, proc.returncode, out, err)


def test_a_target_moved_on_by_hand_while_the_run_steps_stops_it(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = gated_fleet(tmp_path)
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        moved = move_the_other_on_mid_run(ledger, lambda: proc.poll() is None)
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # it went on, then waits on approvals
        out, err = _end(proc, ledger, world)
    finally:
        (tmp_path / "go").touch()
        if proc.poll() is None:
            out, err = _end(proc, ledger, world)
    stopped_on_the_mid_run_edit(ledger, moved, proc.returncode, out, err)


def test_a_hand_edit_and_a_pause_together_mid_run_end_the_run_3(tmp_path: Path, checkpointer) -> None:
    """The other queued target is moved on by hand, then the ledger is paused: the run says the edit
    and ends 3, as a session and a workflow do (it ended "ledger paused", exit 4, the edit unsaid)."""
    url, _schema = checkpointer
    ledger = gated_fleet(tmp_path)
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        moved = move_the_other_on_and_pause(ledger, lambda *args: handoff(*args, world=world))
        out, err = proc.communicate(timeout=60)
    finally:
        (tmp_path / "go").touch()
        if proc.poll() is None:
            out, err = _end(proc, ledger, world)
    stopped_on_the_mid_run_edit(ledger, moved, proc.returncode, out, err)
    assert load(ledger)["paused"]["why"] == "incident"


def test_a_hand_edit_only_the_closing_note_meets_ends_the_run_3(tmp_path: Path, checkpointer) -> None:
    """db-01's check runs; its intent is removed and it is marked done by hand. The run names db-01
    and `handoff reconcile` after its note and exits 3, as a session does."""
    url, _schema = checkpointer
    ledger = gated_fleet(tmp_path, ONE)
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        finish_the_only_target_by_hand(ledger)
        out, err = proc.communicate(timeout=60)
    finally:
        (tmp_path / "go").touch()
        if proc.poll() is None:
            out, err = _end(proc, ledger, world)
    said_after_the_note(ledger, proc.returncode, out, err)


def test_an_approval_after_the_runtime_was_killed_does_not_claim_it_resumes(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "checked"}})
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval", 60, "db-19 to ask for link")
        wait_for(lambda: any(r.get("kind") == "waiting" for r in journal(ledger)), 60, "the thread to wait")
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the runtime is gone; its lease stays in the ledger
        proc.communicate()
    thread = f"handoff-{load(ledger)['id']}"
    assert load(ledger)["session"]["runtime"] == "langgraph"
    approved = handoff("approve", str(ledger), "db-19", "--yes", "--as", "human-oncall", world=world)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert f"the LangGraph runtime resumes thread {thread} when it sees this change" not in approved.stderr, approved.stderr
    assert f"no LangGraph runtime runs thread {thread} now" in approved.stderr, approved.stderr
    assert load(ledger)["targets"]["db-19"]["state"] == "checked"  # true: nothing resumed it
    assert not [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "link"]


def test_a_target_deleted_by_hand_while_it_steps_ends_the_run_2(tmp_path: Path, checkpointer) -> None:
    """The target whose check runs is deleted from the file by hand: the run says why it cannot go
    on and exits 2, as a session does (it exited 1 with a bare `handoff:` line)."""
    url, _schema = checkpointer
    ledger = gated_fleet(tmp_path)
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        removed = remove_the_running_target(ledger)
        out, err = proc.communicate(timeout=60)
    finally:
        (tmp_path / "go").touch()
        if proc.poll() is None:
            proc.kill()
            out, err = proc.communicate()
    refused_as_a_session(removed, proc.returncode, out, err)
