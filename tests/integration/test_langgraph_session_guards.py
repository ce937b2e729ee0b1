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
  on it as if the edit were progress.
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

from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import ROOT, counts, demo_copy, env, handoff, journal, load, wait_for  # noqa: E402

EXPIRE = 3.0  # seconds: the approval request's `expire_after`


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
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}}, approval_policy={"expire_after": f"{EXPIRE:g}s"})
    world = tmp_path / "world"
    proc = _runtime(ledger, url, world)
    try:
        wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval", 60, "db-19 to ask for link")
        # The request expires while the thread waits on its interrupt.
        wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] != "awaiting_approval", EXPIRE + 30, "db-19's request to expire")
        target = load(ledger)["targets"]["db-19"]
        assert (target["state"], target.get("reason")) == ("blocked", f"approval request expired after {EXPIRE:g}s"), target
        late = handoff("approve", str(ledger), "db-19", "--yes", "--as", "human-oncall", world=world)
        assert late.returncode != 0, late.stdout + late.stderr  # nothing waits on an approval any more
    finally:
        out, err = _end(proc, ledger, world)
    assert counts(world)["db-19"]["link_runs"] == 0, counts(world)
    assert not [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "link"]
    assert any(r.get("kind") == "approval_expired" and r.get("target") == "db-19" for r in journal(ledger)), out + err
    assert proc.returncode == 0, out + err
    assert load(ledger).get("session") is None


def test_a_target_changed_outside_the_engine_stops_the_run_before_any_action(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}, "db-21": {"state": "queued"}})
    world = tmp_path / "world"
    assert handoff("note", str(ledger), "--set", "shift note", world=world).returncode == 0  # the engine's last write
    text = ledger.read_text()
    edited = text.replace("db-19:\n    state: queued", "db-19:\n    state: verified")  # never linked: no step makes it
    assert edited != text, text
    ledger.write_text(edited)
    proc = _runtime(ledger, url, world)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # it went on to act, then waits on approvals
        out, err = _end(proc, ledger, world)
    data = load(ledger)
    assert proc.returncode == 3, out + err
    assert "changed outside the engine" in out and "stopping before any action" in out, out
    assert {n: t["state"] for n, t in data["targets"].items()} == {"db-19": "verified", "db-21": "queued"}
    assert not [r for r in journal(ledger) if r.get("kind") in ("step_start", "gate")]
    assert data.get("session") is None


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
