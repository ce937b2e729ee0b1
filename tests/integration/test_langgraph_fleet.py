"""The LangGraph runtime as operators run it: real `handoff` processes, the real PostgreSQL
checkpointer (a schema of the test's own in database `test`), the demo simulator's world.

- a cut of the demo fleet driven to the end while a human approves mid-run through
  `handoff approve`: every irreversible step started exactly once (the simulator counts
  runs before it acts), ledger and journal complete, `handoff status` names the thread,
  old checkpoints pruned to the keep count and the tables' size reported;
- kill -9 of the runtime mid-node, again and again, a new runtime after each: it resumes
  at the node it left; reversible steps run again, irreversible ones are proved by their
  probe, never re-run;
- bad input (no checkpointer, a database that does not answer) is refused with a clear
  error, exit 2 or 6, and the ledger on disk unchanged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer, rows  # noqa: E402,F401
from session_kit import ROOT, counts, demo_copy, env, handoff, journal, load  # noqa: E402

from engine.session.probes import find_step_processes  # noqa: E402

IRREVERSIBLE = ("link", "cutover")
TARGETS = {"db-18": {"state": "replicating", "checkpoint": "0/9A3F2C10"}, "db-19": {"state": "queued"},
           "db-20": {"state": "blocked", "reason": "pending app-team ack"}, "db-21": {"state": "queued"},
           "db-22": {"state": "queued"}}
TO_DO = ("db-18", "db-19", "db-21", "db-22")
KILL_SPEED = "3"
# A reversible step's window at speed 3 (check: 0.5 s) can pass between two polls on a loaded
# machine (each poll reads the journal and scans the processes); at speed 1 it lasts 1.5 s.
REVERSIBLE_KILL_SPEED = "1"
ONE_AT_A_TIME = ["never run cutover on a db whose state != verified", "never touch more than 1 db concurrently",
                 "pause if error_rate_5m > 0.5%"]


def _runtime(ledger: Path, url: str, world: Path, *extra: str, **env_extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--runtime",
                             "langgraph", "--checkpointer", url, *extra], env={**env(world), **env_extra},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))


def _approve_waiting(ledger: Path, world: Path) -> int:
    given = 0
    for name, t in load(ledger)["targets"].items():
        if t.get("state") == "awaiting_approval":
            result = handoff("approve", str(ledger), name, "--yes", "--as", "human-oncall", world=world)
            assert result.returncode in (0, 1), result.stdout + result.stderr
            given += result.returncode == 0
    return given


def _irreversible_starts(ledger: Path) -> Counter:
    return Counter((r["target"], r["step"]) for r in journal(ledger)
                   if r.get("kind") == "step_start" and r.get("step") in IRREVERSIBLE)


def _assert_finished(ledger: Path, world: Path) -> dict:
    data = load(ledger)
    assert {n: t["state"] for n, t in data["targets"].items() if t["state"] != "done"} == {"db-20": "blocked"}, \
        {n: (t["state"], t.get("reason")) for n, t in data["targets"].items() if t["state"] != "done"}
    final = counts(world)
    assert all(final[n]["cutover_runs"] == 1 for n in TO_DO), final
    assert all(final[n]["link_runs"] == (0 if n == "db-18" else 1) for n in TO_DO), final
    starts = _irreversible_starts(ledger)
    assert set(starts.values()) == {1} and len(starts) == 2 * len(TO_DO) - 1, starts
    assert data.get("session") is None, "the runtime gave the lease back"
    assert not [n for n, t in data["targets"].items() if t.get("in_flight")]
    return data


def test_fleet_to_the_end_with_approvals_mid_run(tmp_path: Path, checkpointer) -> None:
    url, schema = checkpointer
    ledger = demo_copy(tmp_path, targets=TARGETS)
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world, "--keep-checkpoints", "3")
    given, saw_status = 0, ""
    try:
        t0 = time.monotonic()
        while proc.poll() is None:
            assert time.monotonic() - t0 < 180, "the fleet did not finish in time"
            if not saw_status and load(ledger).get("session"):
                saw_status = handoff("status", str(ledger), world=world).stdout
            given += _approve_waiting(ledger, world)
            time.sleep(0.2)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    data = _assert_finished(ledger, world)
    thread = f"handoff-{data['id']}"
    assert given == 2 * len(TO_DO) - 1
    assert f"langgraph thread {thread}" in saw_status, saw_status
    assert f"langgraph thread {thread} holds the ledger" in out and f"langgraph thread {thread} ended (exit 0)" in out
    assert "nothing can proceed without a human" in data["handoff_note"] and "db-20" in data["handoff_note"]
    for name in TO_DO:
        kinds = {(r.get("kind"), r.get("step")) for r in journal(ledger) if r.get("target") == name}
        assert {("approval", "cutover"), ("step_start", "cutover"), ("step_end", "cutover")} <= kinds, (name, kinds)
    # Retention: the thread keeps 3 checkpoints (each namespace), the rest were pruned as it went.
    kept = rows(schema, "checkpoints", thread)
    assert 1 <= kept <= 3, kept
    assert "pruned this run" in out and "the checkpoint tables hold" in out
    print(f"langgraph fleet: {kept} checkpoints kept; {out.split('the checkpoint tables hold')[1].split(chr(10))[0]}")


def test_kill9_mid_node_resumes_where_it_left(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    # One target at a time: with targets in parallel a kill can land between a sibling's intent
    # and its spawn, which blocks that sibling by design (nothing proves it ran). Kills with two
    # steps in flight are test_langgraph_parallel's, made deterministic there.
    ledger = demo_copy(tmp_path, targets=TARGETS, invariants=ONE_AT_A_TIME)
    world = tmp_path / "world"
    killed: list[str] = []
    want = IRREVERSIBLE  # alternate: kill under an irreversible step, then under a reversible one
    # Speed 3 while an irreversible step is wanted (it waits for its approval, so the test is
    # there when it starts), 1 while a reversible one is: slow enough to see each step's window.
    proc = _runtime(ledger, url, world, HANDOFF_SIM_SPEED=KILL_SPEED)
    try:
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None:
                out, err = proc.communicate()
                if killed and load(ledger).get("session") is None:
                    break
                raise AssertionError(f"the runtime ended before it was killed: {out}{err}")
            assert time.monotonic() - t0 < 300, f"the run did not finish; killed {killed}"
            running = _running(ledger)
            victim = next(((n, s) for n, s in running.items() if (s in want)), None)
            if victim and len(killed) < 4:
                os.kill(proc.pid, signal.SIGKILL)  # the runtime only: its step process runs on, as after a crash
                proc.wait(10)
                killed.append(f"{victim[0]}:{victim[1]}")
                want = ("check", "replicate") if want is IRREVERSIBLE else IRREVERSIBLE
                speed = "50" if len(killed) == 4 else KILL_SPEED if want is IRREVERSIBLE else REVERSIBLE_KILL_SPEED
                proc = _runtime(ledger, url, world, HANDOFF_SIM_SPEED=speed)
                continue
            _approve_waiting(ledger, world)
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(killed) == 4, killed
    _assert_finished(ledger, world)
    records = journal(ledger)
    assert any("already started (journal seq" in r.get("msg", "") for r in records)
    proved = [r for r in records if "is irreversible, so it is not run again; its verify proves it happened" in r.get("msg", "")]
    assert len(proved) >= 2, [r["msg"] for r in records if r.get("kind") == "reconcile"]
    assert any("it will run again" in r.get("msg", "") for r in records), killed
    assert any("resumes at run db-" in r.get("msg", "") for r in records)
    print(f"langgraph kill -9: {killed}")


def _spawned(ledger: Path) -> bool:
    """Every intent in flight has its step's process running: one carries the intent's token
    in its environment (a quick step's pid never reaches the ledger: engine.session.steps)."""
    return all(find_step_processes(t["in_flight"]["token"]) for t in load(ledger)["targets"].values() if t.get("in_flight"))


def _running(ledger: Path) -> dict[str, str]:
    """target -> step of every intent in flight, when each one's start is journaled (by its
    token) and its process runs (found by that token); else nothing. A kill between an intent
    and its spawn blocks that target by design (nothing proves it ran), and with targets in
    parallel a sibling may be in that gap: the test kills outside it."""
    flying = {n: t["in_flight"] for n, t in load(ledger)["targets"].items() if t.get("in_flight")}
    started = {r.get("token") for r in journal(ledger) if r.get("kind") == "step_start"}
    if all(f.get("token") in started and find_step_processes(f["token"]) for f in flying.values()):
        return {n: f["step"] for n, f in flying.items()}
    return {}


def test_bad_checkpointer_is_refused_and_the_ledger_unchanged(tmp_path: Path) -> None:
    ledger = demo_copy(tmp_path, targets=TARGETS)
    world = tmp_path / "world"
    before = ledger.read_bytes()
    missing = handoff("resume", "--ledger", str(ledger), "--runtime", "langgraph", world=world)
    assert missing.returncode == 2 and "--runtime langgraph needs --checkpointer postgresql://" in missing.stderr
    down = handoff("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer",
                   "postgresql://127.0.0.1:1/test", world=world)
    assert down.returncode == 6, down.stdout + down.stderr
    assert "the checkpointer database does not answer" in down.stderr
    keep = handoff("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer",
                   "postgresql://127.0.0.1/test", "--keep-checkpoints", "0", world=world)
    assert keep.returncode == 2 and "--keep-checkpoints must be at least 1" in keep.stderr
    assert ledger.read_bytes() == before and not load(ledger).get("session")
