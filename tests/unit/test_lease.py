"""The heartbeat sidecar and the rules that make a lease live, dead or stale."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

from engine.model import SessionLease
from engine.session.lease import (
    Heartbeat,
    HeartbeatThread,
    LeaseState,
    heartbeat_path,
    lease_state,
    new_session_id,
)
from engine.session.runner import process_start_time

HOST = socket.gethostname()
NOW = 1_750_000_000.0


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _my_lease(**kw) -> SessionLease:
    base = dict(
        id="s1", host=HOST, pid=os.getpid(), pid_start=process_start_time(os.getpid()),
        user="alice", started_at=_stamp(NOW - 600),
    )
    base.update(kw)
    return SessionLease(**base)


def _beat(session="s1", age=3.0, **kw) -> dict:
    return {"session": session, "pid": 1, "host": HOST, "at": NOW - age, "phase": "acting",
            "budget_used": 0.42, "detail": "", **kw}


def _dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start_time(proc.pid)
    proc.wait()
    return proc.pid, start or 0.0


def test_heartbeat_path_is_beside_the_ledger(tmp_path):
    """The sidecar sits in the ledger's folder, named after it."""
    ledger = str(tmp_path / "fleet.yaml")
    assert heartbeat_path(ledger) == ledger + ".heartbeat"


def test_heartbeat_write_and_read(tmp_path):
    """A written heartbeat reads back with every field and leaves no temp file."""
    path = str(tmp_path / "l.yaml.heartbeat")
    Heartbeat(path).write("s1", budget_used=0.5, phase="acting", detail="db-18 cutover")
    data = Heartbeat.read(path)
    assert data["session"] == "s1" and data["pid"] == os.getpid() and data["host"] == HOST
    assert data["budget_used"] == 0.5 and data["phase"] == "acting"
    assert data["detail"] == "db-18 cutover" and abs(data["at"] - time.time()) < 60
    assert os.listdir(tmp_path) == ["l.yaml.heartbeat"]


def test_heartbeat_missing_or_torn_reads_none(tmp_path):
    """Missing, half-written, non-JSON or wrongly shaped heartbeats read as None."""
    path = tmp_path / "hb"
    assert Heartbeat.read(str(path)) is None
    full = json.dumps({"session": "s1", "at": 1.0, "pid": 1})
    for text in (full[: len(full) // 2], "", "\xff garbage", "[1, 2]", '{"session": "s1"}',
                 '{"session": "s1", "at": "soon"}'):
        path.write_text(text)
        assert Heartbeat.read(str(path)) is None, text
    path.write_bytes(b"\xff\xfe")
    assert Heartbeat.read(str(path)) is None


def test_heartbeat_thread_beats_until_stopped(tmp_path):
    """The thread rewrites the file with state_fn's values, and stops on request."""
    path = str(tmp_path / "hb")
    thread = HeartbeatThread(path, "s9", interval=0.05,
                             state_fn=lambda: {"budget_used": 0.1, "phase": "verifying"})
    thread.start()
    deadline = time.monotonic() + 10
    while thread.beats < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    thread.stop()
    assert not thread.is_alive() and thread.daemon
    assert thread.beats >= 3 and thread.last_error is None
    data = Heartbeat.read(path)
    assert data["session"] == "s9" and data["phase"] == "verifying"
    beats = thread.beats
    time.sleep(0.15)
    assert thread.beats == beats


def test_heartbeat_thread_survives_a_failing_state_fn(tmp_path):
    """A broken state_fn is recorded, and the heartbeat is written anyway."""
    def broken():
        raise KeyError("oops")

    thread = HeartbeatThread(str(tmp_path / "hb"), "s9", interval=10, state_fn=broken)
    thread.beat()
    assert isinstance(thread.last_error, KeyError)
    assert Heartbeat.read(str(tmp_path / "hb"))["phase"] == "running"


def test_new_session_ids_are_unique_short_and_sortable():
    """Ids are short, distinct, and start with the time so they sort by it."""
    ids = [new_session_id() for _ in range(200)]
    assert len(set(ids)) == 200 and all(len(i) <= 20 for i in ids)
    assert ids[0][:8] <= ids[-1][:8]


def test_no_lease():
    """No lease: status none."""
    state = lease_state(None, None, now=NOW, host=HOST)
    assert isinstance(state, LeaseState) and state.status == "none"


def test_live_lease_with_fresh_heartbeat():
    """A running holder with a recent heartbeat is live, described for a human."""
    state = lease_state(_my_lease(), _beat(age=3), now=NOW, host=HOST)
    assert state.status == "live" and state.heartbeat_age == 3
    assert f"session s1 on {HOST} pid {os.getpid()} (alice)" in state.detail
    assert "heartbeat 3s ago" in state.detail and "42%" in state.detail


def test_dead_holder_on_this_host():
    """A holder on this host whose pid is gone is dead, whatever its heartbeat says."""
    pid, start = _dead_pid()
    state = lease_state(_my_lease(pid=pid, pid_start=start), _beat(age=1), now=NOW, host=HOST)
    assert state.status == "dead" and "no longer running" in state.detail


def test_recycled_pid_counts_as_dead():
    """Our own pid with another start time is someone else's process: dead."""
    lease = _my_lease(pid_start=process_start_time(os.getpid()) - 5)
    state = lease_state(lease, _beat(age=1), now=NOW, host=HOST)
    assert state.status == "dead" and "another process" in state.detail


def test_dead_pid_on_another_host_is_judged_by_heartbeat():
    """A pid on another host cannot be checked here; the heartbeat decides."""
    pid, start = _dead_pid()
    lease = _my_lease(host="elsewhere-1", pid=pid, pid_start=start)
    assert lease_state(lease, _beat(age=5), now=NOW, host=HOST).status == "live"
    state = lease_state(lease, _beat(age=400), now=NOW, host=HOST)
    assert state.status == "stale" and "last heartbeat 6m ago" in state.detail


def test_stale_without_heartbeat():
    """No heartbeat and an old (or unknown) start is stale; a fresh start is live."""
    other = dict(host="elsewhere-1")
    assert lease_state(_my_lease(**other), None, now=NOW, host=HOST).status == "stale"
    young = _my_lease(started_at=_stamp(NOW - 10), **other)
    assert lease_state(young, None, now=NOW, host=HOST).status == "live"
    unknown = _my_lease(started_at=None, **other)
    assert lease_state(unknown, None, now=NOW, host=HOST).status == "stale"


def test_heartbeat_of_another_session_is_ignored():
    """A leftover heartbeat from an earlier session proves nothing about this one."""
    state = lease_state(_my_lease(host="elsewhere-1"), _beat(session="old", age=1),
                        now=NOW, host=HOST)
    assert state.status == "stale" and state.heartbeat_age is None


def test_stale_after_is_configurable():
    """The staleness threshold is a parameter."""
    lease = _my_lease(host="elsewhere-1")
    assert lease_state(lease, _beat(age=30), now=NOW, host=HOST, stale_after=10).status == "stale"
    assert lease_state(lease, _beat(age=30), now=NOW, host=HOST, stale_after=60).status == "live"
