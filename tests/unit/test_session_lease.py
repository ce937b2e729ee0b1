"""The session lease and the ways a session ends: contention, takeover, stop, SIGTERM, budget."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from session_kit import handoff, journal, load, resume, start, tool, tool_ledger, wait_for

from engine.codec.timefmt import now_iso
from engine.lease.rules import new_session_id, where_pids_count

SLEEPY = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "timeout": 20, "run": tool("sleep", "0.6")}]
PAGER = [{"run": ["{python}", "{ledger_dir}/tool.py", "say"]}]


def _targets(n: int) -> dict:
    return {f"t{i}": {"state": "queued"} for i in range(1, n + 1)}


def test_two_sessions_started_together_exactly_one_runs(tmp_path: Path) -> None:
    """Lease contention: one session runs, the other exits 5 naming the holder."""
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(3))
    a = start("resume", "--ledger", str(ledger), world=tmp_path)
    b = start("resume", "--ledger", str(ledger), world=tmp_path)
    codes = sorted([a.wait(30), b.wait(30)])
    assert codes == [0, 5]
    loser = a if a.returncode == 5 else b
    assert "another session drives this ledger: session" in loser.stderr.read()
    assert load(ledger).get("session") is None


def test_dead_pid_lease_is_taken_over_and_paged(tmp_path: Path) -> None:
    """A lease on this host whose pid is gone is taken over at once, journaled and paged."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = where_pids_count()
    lease = {"id": "old-session", "host": socket.gethostname(), "pid": dead.pid, "started_at": now_iso(),
             "boot_id": here["boot_id"], "pid_ns": here["pid_ns"]}
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(1), session=lease, notify=PAGER)
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "took over the lease: session old-session" in result.stdout and "is no longer running" in result.stdout
    kinds = [r["kind"] for r in journal(ledger)]
    assert "lease_takeover" in kinds
    assert any(r["kind"] == "page" and r.get("event") == "lease_takeover" and r.get("ok") for r in journal(ledger))


def test_stale_heartbeat_lease_is_taken_over(tmp_path: Path) -> None:
    """A lease from another host whose heartbeat stopped long ago is taken over."""
    lease = {"id": "far-away", "host": "another-host", "pid": 1, "started_at": "2026-01-01T00:00:00Z"}
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(1), session=lease)
    beat = Path(os.path.realpath(ledger) + ".heartbeat")
    beat.write_text(json.dumps({"session": "far-away", "pid": 1, "host": "another-host", "at": time.time() - 3600}))
    os.utime(beat, (time.time() - 3600, time.time() - 3600))  # staleness is the file's age, on its own filesystem
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "took over the lease: session far-away on another-host" in result.stdout and "stale" in result.stdout


def test_live_lease_elsewhere_is_refused(tmp_path: Path) -> None:
    """A live lease (fresh heartbeat) means exit 5 and a ledger left exactly as it was."""
    lease = {"id": "busy-one", "host": "another-host", "pid": 1, "started_at": now_iso()}
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(1), session=lease)
    beat = Path(os.path.realpath(ledger) + ".heartbeat")
    beat.write_text(json.dumps({"session": "busy-one", "pid": 1, "host": "another-host", "at": time.time()}))
    before = ledger.read_bytes()
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 5
    assert "busy-one on another-host" in result.stderr
    assert ledger.read_bytes() == before


def test_stop_request_ends_a_waiting_session(tmp_path: Path) -> None:
    """`handoff stop` is noticed within a couple of seconds; the session hands off and exits 0."""
    steps = [{"name": "go", "from": "queued", "to": "done", "reversible": False, "run": tool("say", "went")}]
    ledger = tool_ledger(tmp_path, steps, _targets(1))
    proc = start("resume", "--ledger", str(ledger), "--wait", world=tmp_path)
    wait_for(lambda: any(r["kind"] == "waiting" for r in journal(ledger)), what="the session to wait for approvals")
    stopped = handoff("stop", str(ledger), "--as", "bob", world=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    assert proc.wait(15) == 0  # noticed within seconds, not at the end of some long wait
    data = load(ledger)
    assert data.get("session") is None
    assert "stop requested by bob" in data["handoff_note"]
    assert "t1 waiting on human approval for go" in data["handoff_note"]


def test_a_stop_landing_between_the_decision_and_its_intent_starts_nothing(tmp_path: Path) -> None:
    """The session has decided to start a step; before it writes the intent, `handoff stop`
    lands (a failpoint pauses the session's thread there): the intent is refused, no step
    starts, and the session ends on the stop."""
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(2))
    marker = tmp_path / "paused"
    world = {**os.environ, "HANDOFF_FAILPOINTS": "before-intent", "HANDOFF_FAILPOINT_PAUSE": str(marker)}
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger)],
                            env={**world, "HANDOFF_SIM_WORLD": str(tmp_path)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(Path(__file__).resolve().parents[2]),
                            start_new_session=True)
    try:
        wait_for(marker.exists, what="the session paused before its first intent")
        stopped = handoff("stop", str(ledger), "--as", "bob", world=tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        marker.unlink()
        assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    records = journal(ledger)
    assert not [r for r in records if r["kind"] == "step_start"], "a step started after the stop request"
    assert all(t.get("in_flight") is None for t in load(ledger)["targets"].values())
    assert "stop requested by bob" in load(ledger)["handoff_note"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_finishes_the_running_step_and_hands_off(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM ends the session like the budget does: the running step is recorded, nothing new
    starts. So does SIGHUP (the terminal hung up: an SSH connection dropped)."""
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(5))
    proc = start("resume", "--ledger", str(ledger), world=tmp_path)
    wait_for(lambda: any(r["kind"] == "step_start" for r in journal(ledger)), what="a step to start")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, out + err
    assert f"{sig.name} received" in out
    data = load(ledger)
    assert data.get("session") is None
    assert not any(t.get("in_flight") for t in data["targets"].values())
    started = [r["target"] for r in journal(ledger) if r["kind"] == "step_start"]
    assert all(data["targets"][t]["state"] == "checked" for t in started)
    assert any(t["state"] == "queued" for t in data["targets"].values())


def test_a_second_ctrl_c_says_what_the_session_still_waits_for(tmp_path: Path) -> None:
    """Ctrl-C, then Ctrl-C again while the step runs on: the second is answered (it was met with
    silence) with the step it waits for and how long that has run. The step is still not stopped
    halfway: once it ends it is recorded, the note written, exit 0."""
    gate = "import os, time\nwhile not os.path.exists(os.path.join('{ledger_dir}', 'go')): time.sleep(0.05)"
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "timeout": 60,
              "run": ["{python}", "-c", gate]}]
    ledger = tool_ledger(tmp_path, steps, _targets(1))
    proc = start("resume", "--ledger", str(ledger), world=tmp_path)
    try:
        wait_for(lambda: any(r["kind"] == "step_start" for r in journal(ledger)), what="the step to start")
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: any(r["kind"] == "handoff_start" for r in journal(ledger)), what="the first Ctrl-C answered")
        assert not [r for r in journal(ledger) if "still finishing" in r.get("msg", "")]
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: any("still finishing t1 check (running " in r.get("msg", "") for r in journal(ledger)),
                 what="the second Ctrl-C answered")
        (ledger.parent / "go").touch()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out + err
    assert "still finishing t1 check (running " in out and "a session never stops a step halfway" in out
    data = load(ledger)
    assert data["targets"]["t1"]["state"] == "checked" and data.get("session") is None
    assert "SIGINT received" in data["handoff_note"]


def test_under_nohup_a_hang_up_ends_nothing(tmp_path: Path) -> None:
    """SIGHUP ignored (nohup): the session is not ended by one; it runs every target to its end."""
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(3))
    proc = start("resume", "--ledger", str(ledger), world=tmp_path,
                 preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    wait_for(lambda: any(r["kind"] == "step_start" for r in journal(ledger)), what="a step to start")
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert "SIGHUP received" not in out
    assert [t["state"] for t in load(ledger)["targets"].values()] == ["checked"] * 3


def test_step_budget_ends_at_the_handoff_fraction(tmp_path: Path) -> None:
    """--max-steps 4 with the default 0.75 runs 3 steps, then writes the note and exits 0."""
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "ok")}]
    ledger = tool_ledger(tmp_path, steps, _targets(6))
    result = resume(ledger, "--max-steps", "4", world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "session budget 75% used. Writing handoff_note and exiting cleanly." in result.stdout
    states = [t["state"] for t in load(ledger)["targets"].values()]
    assert states.count("checked") == 3 and states.count("queued") == 3
    assert "Next:\n- t4 queued, ready for check" in load(ledger)["handoff_note"]


def test_wall_clock_budget_ends_the_session(tmp_path: Path) -> None:
    """--max-minutes is a budget too; the first budget to reach --handoff-at ends the session."""
    ledger = tool_ledger(tmp_path, SLEEPY, _targets(20))
    result = resume(ledger, "--max-minutes", "0.02", "--handoff-at", "0.5", world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "session budget" in result.stdout
    assert any(t["state"] == "queued" for t in load(ledger)["targets"].values())


def test_session_ids_sort_by_start() -> None:
    """Session ids are unique and start with the start time."""
    a, b = new_session_id(), new_session_id()
    assert a != b and a[:8] <= b[:8]
