"""The lease rules seen from real sessions: another host's clock, another pid namespace,
a holder that cannot beat, and a writer frozen inside the lock."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from session_kit import ROOT, env, journal, load, start, tool, tool_ledger, wait_for

from engine.codec.timefmt import now_iso
from engine.lease.rules import where_pids_count
from engine.session.probes import find_step_processes

SLEEPY = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "timeout": 30, "run": tool("sleep", "0.4")}]


def _run(*args: str, world: Path, timeout: float = 60, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], env={**env(world), **extra},
                          capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))


def _fresh_beat(ledger: Path, holder: str, at: float) -> None:
    beat = Path(os.path.realpath(ledger) + ".heartbeat")
    beat.write_text(json.dumps({"session": holder, "pid": 1, "host": "far-host", "at": at}))


def test_a_live_holder_on_a_host_whose_clock_is_200s_off_is_not_taken_over(tmp_path: Path) -> None:
    """The holder's own clock says its last beat was 200 s ago (or ahead); the file was written just now: live, exit 5."""
    lease = {"id": "skewed", "host": "far-host", "pid": 4242, "started_at": now_iso(time.time() - 400)}
    ledger = tool_ledger(tmp_path, SLEEPY, {"t1": {}}, session=lease)
    for skew in (-200, 200):
        _fresh_beat(ledger, "skewed", time.time() + skew)
        before = ledger.read_bytes()
        result = _run("resume", "--ledger", str(ledger), world=tmp_path, HANDOFF_LEASE_STALE_AFTER="180")
        assert result.returncode == 5, result.stdout + result.stderr
        assert "skewed on far-host" in result.stderr and ledger.read_bytes() == before


def test_a_fresh_heartbeat_beats_a_pid_from_another_pid_namespace(tmp_path: Path) -> None:
    """Same host name, a pid that is not running here, but another pid namespace (a container): the fresh beat wins."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = where_pids_count()
    lease = {"id": "in-a-container", "host": socket.gethostname(), "pid": dead.pid, "boot_id": here["boot_id"],
             "pid_ns": "pid:[4026532999]", "started_at": now_iso()}
    ledger = tool_ledger(tmp_path, SLEEPY, {"t1": {}}, session=lease)
    _fresh_beat(ledger, "in-a-container", time.time())
    result = _run("resume", "--ledger", str(ledger), world=tmp_path)
    assert result.returncode == 5, result.stdout + result.stderr
    assert load(ledger)["session"]["id"] == "in-a-container"


def test_a_session_that_cannot_beat_starts_nothing_new_and_hands_off(tmp_path: Path) -> None:
    """Its heartbeat path becomes a folder: after half the stale limit it stops starting steps and ends as for a stop."""
    ledger = tool_ledger(tmp_path, SLEEPY, {f"t{i}": {} for i in range(1, 30)})
    session = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger)],
                               env={**env(tmp_path), "HANDOFF_LEASE_STALE_AFTER": "2"}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    beat = Path(os.path.realpath(ledger) + ".heartbeat")
    wait_for(lambda: any(t.get("state") == "checked" for t in load(ledger)["targets"].values()), what="a first step")
    beat.unlink()
    beat.mkdir()
    out, err = session.communicate(timeout=60)
    assert session.returncode == 0, out + err
    assert "could not write its heartbeat" in out
    done = sum(1 for t in load(ledger)["targets"].values() if t.get("state") == "checked")
    assert 1 <= done < 29  # it stopped early, on purpose
    assert load(ledger).get("session") is None
    assert "could not write its heartbeat" in load(ledger)["handoff_note"]


def _hold_lock(ledger: Path, seconds: float) -> subprocess.Popen:
    """Another process takes the ledger's lock the engine's way (flock + a holder record) and sits on it."""
    code = (
        "import fcntl, json, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.ftruncate(fd, 0); os.write(fd, json.dumps({'pid': os.getpid(), 'host': 'bastion-9', "
        "'command': 'handoff pause frozen', 'since': '2026-11-30T02:00:00Z'}).encode())\n"
        "print('held', flush=True); time.sleep(float(sys.argv[2]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, os.path.realpath(ledger) + ".lock", str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_writer_frozen_in_the_lock_is_named_and_nobody_hangs(tmp_path: Path) -> None:
    """`pause` exits 1 after HANDOFF_LOCK_TIMEOUT naming the holder; `resume` exits 5; nothing changes."""
    ledger = tool_ledger(tmp_path, SLEEPY, {"t1": {}})
    before = ledger.read_bytes()
    holder = _hold_lock(ledger, 30)
    try:
        paused = _run("pause", str(ledger), "--reason", "x", world=tmp_path, HANDOFF_LOCK_TIMEOUT="1")
        assert paused.returncode == 1, paused.stderr
        assert f"by pid {holder.pid} on bastion-9 (handoff pause frozen) since 2026-11-30T02:00:00Z" in paused.stderr
        resumed = _run("resume", "--ledger", str(ledger), world=tmp_path, HANDOFF_LOCK_TIMEOUT="1")
        assert resumed.returncode == 5 and "cannot take the lease" in resumed.stderr
        assert ledger.read_bytes() == before
    finally:
        holder.kill()
        holder.wait()


def test_a_running_session_keeps_waiting_for_the_lock_and_says_so(tmp_path: Path) -> None:
    """A session holding the lease waits past the lock timeout, its heartbeat says who it waits for, then carries on."""
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "timeout": 30, "run": tool("sleep", "1")}]
    ledger = tool_ledger(tmp_path, steps, {"t1": {}, "t2": {}})
    session = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger)],
                               env={**env(tmp_path), "HANDOFF_LOCK_TIMEOUT": "0.5"}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    wait_for(lambda: find_step_processes((load(ledger)["targets"]["t1"].get("in_flight") or {}).get("token", "-")),
             what="t1's step running")
    holder = _hold_lock(ledger, 6)
    beat = Path(os.path.realpath(ledger) + ".heartbeat")

    def waiting() -> bool:
        try:
            return f"waiting for lock held by pid {holder.pid} on bastion-9" in json.loads(beat.read_text()).get("phase", "")
        except (OSError, ValueError):
            return False

    wait_for(waiting, timeout=20, what="the heartbeat to say whose lock it waits for")
    holder.wait(30)
    out, err = session.communicate(timeout=60)
    assert session.returncode == 0, out + err
    assert all(t["state"] == "checked" for t in load(ledger)["targets"].values())
    assert not beat.exists()
