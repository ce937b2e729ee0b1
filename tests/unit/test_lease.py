"""One lease, three kinds of holder: the heartbeat sidecar and the rules that make a lease
live, dead or stale (engine.lease.rules), the same for a session, a Claude Code session and a
Temporal workflow."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time

import pytest

from engine.host.procs import process_start_time
from engine.lease.heartbeat import Heartbeat
from engine.lease.rules import HeartbeatThread, LeaseState, lease_state, new_session_id, where_pids_count
from engine.ledger.model import SessionLease

HOST = socket.gethostname()
HERE = where_pids_count()


def _my_lease(**kw) -> SessionLease:
    base = dict(id="s1", host=HOST, pid=os.getpid(), pid_start=process_start_time(os.getpid()),
                boot_id=HERE["boot_id"], pid_ns=HERE["pid_ns"], user="alice")
    base.update(kw)
    return SessionLease(**base)


def _beat(session="s1", age=3.0, **kw) -> dict:
    return {"session": session, "pid": 1, "host": HOST, "at": 0, "phase": "acting", "budget_used": 0.42,
            "detail": "", "age": age, **kw}


def _dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start_time(proc.pid)
    proc.wait()
    return proc.pid, start or 0.0


def test_heartbeat_write_and_read_with_age_on_the_filesystems_clock(tmp_path):
    """A written heartbeat reads back with its fields and an age measured by file mtimes, not by `at`."""
    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\ntargets: {}\n")
    beat = Heartbeat(str(tmp_path / "l.yaml.heartbeat"), str(ledger))
    beat.write("s1", budget_used=0.5, phase="running", detail="x")
    got = beat.current()
    assert got["session"] == "s1" and got["phase"] == "running" and got["budget_used"] == 0.5
    assert 0 <= got["age"] < 5
    # The writer's clock says an hour ago; the file says now: the file wins.
    data = json.loads((tmp_path / "l.yaml.heartbeat").read_text())
    data["at"] = time.time() - 3600
    (tmp_path / "l.yaml.heartbeat").write_text(json.dumps(data))
    assert beat.current()["age"] < 5
    os.utime(tmp_path / "l.yaml.heartbeat", (time.time() - 500, time.time() - 500))
    assert 495 < beat.current()["age"] < 510
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.yaml", "l.yaml.heartbeat"]  # no probe or temp left


def test_heartbeat_is_readable_by_whoever_reads_the_ledger(tmp_path):
    """A new heartbeat takes the ledger's group/other read bits (mkstemp's 0600 hid it from the team)."""
    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\ntargets: {}\n")
    os.chmod(ledger, 0o664)
    Heartbeat(str(tmp_path / "l.yaml.heartbeat"), str(ledger)).write("s1", phase="running")
    mode = stat.S_IMODE(os.stat(tmp_path / "l.yaml.heartbeat").st_mode)
    assert mode == 0o664


def test_heartbeat_missing_torn_or_symlinked_reads_none(tmp_path):
    """Missing, half-written, non-JSON, wrongly shaped or symlinked heartbeats are no proof of life."""
    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\n")
    path = tmp_path / "l.yaml.heartbeat"
    beat = Heartbeat(str(path), str(ledger))
    assert beat.current() is None
    for body in ('{"session": "s1", "at"', "[]", '{"at": 1}', "\xff\xfe"):
        path.write_text(body, errors="surrogateescape")
        assert beat.current() is None, body
    path.unlink()
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"session": "s1", "at": time.time()}))
    path.symlink_to(real)
    assert beat.current() is None


def test_heartbeat_never_written_through_a_symlink(tmp_path):
    """A planted `ledger.heartbeat -> victim` is refused, and the victim is untouched."""
    from engine.store.sidecar import SidecarRefused

    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "l.yaml.heartbeat").symlink_to(victim)
    with pytest.raises(SidecarRefused, match="is a symlink"):
        Heartbeat(str(tmp_path / "l.yaml.heartbeat"), str(ledger)).write("s1")
    assert victim.read_text() == "precious"


def test_heartbeat_thread_counts_silence_when_it_cannot_beat(tmp_path, monkeypatch):
    """A thread that cannot write its heartbeat says, after half the stale limit, that its holder may not act."""
    monkeypatch.setenv("HANDOFF_LEASE_STALE_AFTER", "0.4")
    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\n")
    (tmp_path / "l.yaml.heartbeat").mkdir()  # a folder where the heartbeat goes: every write fails
    thread = HeartbeatThread(Heartbeat(str(tmp_path / "l.yaml.heartbeat"), str(ledger)), "s9", interval=10)
    assert thread.can_act() is None
    assert thread.beat() is False and thread.last_error is not None
    time.sleep(0.3)
    assert "could not write its heartbeat" in thread.can_act()


def test_heartbeat_thread_survives_a_failing_state_fn(tmp_path):
    """A broken state_fn is recorded, and the heartbeat is written anyway."""
    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\n")

    def broken():
        raise KeyError("oops")

    beat = Heartbeat(str(tmp_path / "hb"), str(ledger))
    thread = HeartbeatThread(beat, "s9", interval=10, state_fn=broken)
    assert thread.beat() is True
    assert isinstance(thread.last_error, KeyError)
    assert beat.current()["phase"] == "running"


def test_new_session_ids_are_unique_short_and_sortable():
    """Ids are short, distinct, and start with the time so they sort by it."""
    ids = [new_session_id() for _ in range(200)]
    assert len(set(ids)) == 200 and all(len(i) <= 20 for i in ids)
    assert ids[0][:8] <= ids[-1][:8]


def test_no_lease():
    """No lease: status none."""
    state = lease_state(None, None)
    assert isinstance(state, LeaseState) and state.status == "none"


def test_live_lease_with_fresh_heartbeat():
    """A running holder with a recent heartbeat is live, described for a human."""
    state = lease_state(_my_lease(), _beat(age=3))
    assert state.status == "live" and state.heartbeat_age == 3
    assert f"session s1 on {HOST} pid {os.getpid()} (alice)" in state.detail
    assert "heartbeat 3s ago" in state.detail and "42%" in state.detail


def test_dead_holder_on_this_host_boot_and_pid_namespace():
    """A holder here (same host, boot and pid namespace) whose pid is gone is dead at once."""
    pid, start = _dead_pid()
    state = lease_state(_my_lease(pid=pid, pid_start=start), _beat(age=1))
    assert state.status == "dead" and "no longer running" in state.detail


def test_recycled_pid_counts_as_dead():
    """Our own pid with another start time is someone else's process: dead."""
    lease = _my_lease(pid_start=process_start_time(os.getpid()) - 5)
    state = lease_state(lease, _beat(age=1))
    assert state.status == "dead" and "another process" in state.detail


def test_a_fresh_heartbeat_is_live_when_the_pid_cannot_be_checked_here():
    """Same host name but another pid namespace (a container on the host's network) or another boot:
    the pid proves nothing and a fresh heartbeat means live."""
    pid, start = _dead_pid()
    for other in ({"pid_ns": "pid:[1]"}, {"boot_id": "another-boot"}, {"pid_ns": None}, {"boot_id": None}):
        lease = _my_lease(pid=pid, pid_start=start, **other)
        assert lease_state(lease, _beat(age=0.0000005)).status == "live", other
        assert lease_state(lease, _beat(age=400), limit=180).status == "stale", other


def test_dead_pid_on_another_host_is_judged_by_heartbeat():
    """A pid on another host cannot be checked here; the heartbeat decides."""
    pid, start = _dead_pid()
    lease = _my_lease(host="elsewhere-1", pid=pid, pid_start=start)
    assert lease_state(lease, _beat(age=5)).status == "live"
    state = lease_state(lease, _beat(age=400), limit=180)
    assert state.status == "stale" and "last heartbeat 6m ago" in state.detail


def test_no_heartbeat_is_stale_unless_the_pid_runs_here():
    """A holder beats before its lease is visible: without a heartbeat of its own a lease is stale,
    unless its pid is checkable here and running."""
    assert lease_state(_my_lease(host="elsewhere-1"), None).status == "stale"
    assert lease_state(_my_lease(), None).status == "live"
    claude = SessionLease(id="cc-123", runtime="claude-code", host=HOST, user="bob")
    state = lease_state(claude, None)
    assert state.status == "stale" and "Claude Code session cc-123" in state.detail


def test_heartbeat_of_another_holder_is_ignored():
    """A leftover heartbeat from an earlier holder proves nothing about this one."""
    state = lease_state(_my_lease(host="elsewhere-1"), _beat(session="old", age=1))
    assert state.status == "stale" and state.heartbeat_age is None


def test_stale_limit_comes_from_the_environment(monkeypatch):
    """HANDOFF_LEASE_STALE_AFTER sets the limit (default 180 s)."""
    lease = _my_lease(host="elsewhere-1")
    assert lease_state(lease, _beat(age=170)).status == "live"
    monkeypatch.setenv("HANDOFF_LEASE_STALE_AFTER", "10")
    assert lease_state(lease, _beat(age=30)).status == "stale"
    assert lease_state(lease, _beat(age=5)).status == "live"
