"""`handoff resume --runtime langgraph` asked to end as a built-in session is (a supervisor's
SIGTERM, Ctrl-C, or a hang-up when the SSH connection of its terminal drops), while a step
runs, between two steps or while it waits on an approval: a running step finishes and is
recorded, nothing new starts, the note says why, the lease is given back, exit 0. Under
`nohup` a hang-up ends nothing. A real process, the real PostgreSQL checkpointer."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import ROOT, env, journal, load, start, tool, tool_ledger, wait_for  # noqa: E402

from tests.conftest import wait_stopped  # noqa: E402

SLEEPY = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "timeout": 20, "run": tool("sleep", "0.6")}]
ONE_AT_A_TIME = ["never touch more than 1 target concurrently"]
CUT = [{"name": "cut", "from": "queued", "to": "done", "reversible": False, "timeout": 20, "run": tool("say", "cut")}]


def _run(tmp_path: Path, url: str, n: int, **popen):
    ledger = tool_ledger(tmp_path, SLEEPY, {f"t{i}": {"state": "queued"} for i in range(1, n + 1)}, invariants=ONE_AT_A_TIME)
    proc = start("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer", url, world=tmp_path, **popen)
    wait_for(lambda: any(r["kind"] == "step_start" for r in journal(ledger)), timeout=60, what="a step to start")
    return ledger, proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_ends_the_run_on_purpose(tmp_path: Path, checkpointer, sig: signal.Signals) -> None:
    url, _schema = checkpointer
    ledger, proc = _run(tmp_path, url, 5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert f"{sig.name} received. Writing handoff_note and handing off." in out, out
    data = load(ledger)
    assert data.get("session") is None, data.get("session")  # the lease given back
    assert not any(t.get("in_flight") for t in data["targets"].values())
    records = journal(ledger)
    started = [r["target"] for r in records if r["kind"] == "step_start"]
    ended = [r["target"] for r in records if r["kind"] == "step_end"]
    assert sorted(started) == sorted(ended) and all(data["targets"][t]["state"] == "checked" for t in started)
    assert any(t["state"] == "queued" for t in data["targets"].values()), "it started nothing new after the signal"
    assert data.get("handoff_note"), "the note is written"


def test_a_signal_between_two_steps_starts_no_other(tmp_path: Path, checkpointer) -> None:
    """The signal lands while the plan node decides (the process frozen there, SIGTERM sent,
    then let go): no step starts at all."""
    url, _schema = checkpointer
    ledger = tool_ledger(tmp_path, SLEEPY, {"t1": {"state": "queued"}}, invariants=ONE_AT_A_TIME)
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--runtime",
                             "langgraph", "--checkpointer", url], env={**env(tmp_path), "HANDOFF_FAILPOINTS": "langgraph-plan"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True)
    try:
        wait_stopped(proc.pid, 60)  # frozen in its plan node
        proc.send_signal(signal.SIGTERM)  # pending until it runs again
        proc.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    assert "SIGTERM received. Writing handoff_note and handing off." in out, out
    assert not [r for r in journal(ledger) if r["kind"] == "step_start"]
    data = load(ledger)
    assert data["targets"]["t1"]["state"] == "queued" and data.get("session") is None


def test_a_hang_up_while_it_waits_on_an_approval_ends_the_run(tmp_path: Path, checkpointer) -> None:
    """Interrupted on an irreversible edge, waiting for `handoff approve`: a hang-up ends the
    wait and the run on purpose; the target still waits for a person."""
    url, _schema = checkpointer
    ledger = tool_ledger(tmp_path, CUT, {"t1": {"state": "queued"}})
    proc = start("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer", url, world=tmp_path)
    try:
        wait_for(lambda: any(r["kind"] == "waiting" for r in journal(ledger)), timeout=60, what="the run to wait on t1")
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    assert "SIGHUP received. Writing handoff_note and handing off." in out, out
    data = load(ledger)
    assert data["targets"]["t1"]["state"] == "awaiting_approval" and data.get("session") is None
    assert not [r for r in journal(ledger) if r["kind"] == "step_start"]


def test_under_nohup_a_hang_up_ends_nothing(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger, proc = _run(tmp_path, url, 3, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert "SIGHUP received" not in out
    assert [t["state"] for t in load(ledger)["targets"].values()] == ["checked"] * 3


def test_a_heartbeat_lost_while_waiting_ends_the_run_with_exit_5(tmp_path: Path, checkpointer, monkeypatch) -> None:
    """The wait on approvals stops acting when its heartbeat cannot be written (as between two
    steps): exit 5, like a lease lost, never 0, which says the run ended on purpose."""
    from langgraph_kit import Thread

    from engine.langgraph import nodes
    from engine.langgraph.runtime import Run

    url, _schema = checkpointer
    ledger = tool_ledger(tmp_path, CUT, {"t1": {"state": "awaiting_approval", "awaiting": "cut"}})
    thread = Thread(ledger, url, monkeypatch)
    beat = SimpleNamespace(asked_to_end=None, can_act=lambda: "could not write its heartbeat for 31 s")
    run = Run(thread.job, url, 20)
    run.actor, run.beat = nodes.GraphActor(thread.job, beat), beat
    waiting = SimpleNamespace(value=nodes.approval_request(thread.job, "t1"))
    assert waiting.value is not None
    ends = run._wait([waiting])
    assert ends is not None and ends.code == 5 and "could not write its heartbeat" in ends.why, ends
