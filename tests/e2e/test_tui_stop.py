"""`S` in a real terminal stops a real session promptly: tmux runs handoff-tui, a real `handoff resume`
works through slow steps, the operator presses S; the header says the session is stopping, the
session decides no step after the stop request (the one whose intent was already written may
still run) and ends saying why.

The time from S to the session's exit is printed (bench material), never asserted."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, journal, tui_argv

pytestmark = pytest.mark.e2e

STEP = 0.6  # seconds each step sleeps: long enough that a stop lands mid-run

LEDGER = """\
task: slow-fleet
environment: staging
targets:
{targets}
runbook:
  steps:
    - {{name: check, from: queued, to: checked, reversible: true, run: ["{py}", "-c", "import time; time.sleep({step})"]}}
    - {{name: warm, from: checked, to: done, reversible: true, run: ["{py}", "-c", "import time; time.sleep({step})"]}}
"""


def test_stop_from_the_tui_ends_the_session_before_its_next_step(tmux, tmp_path: Path) -> None:
    """S in tmux: 'stopping' on screen, no step starts after the stop request, the session ends on it."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    targets = "\n".join(f"  t-{i:02d}: {{state: queued}}" for i in range(20))
    ledger.write_text(LEDGER.format(targets=targets, py=sys.executable, step=STEP), encoding="utf-8")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    session = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--as", "agent"],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        tmux.width, tmux.height = 120, 30
        tmux.start(tui_argv(ledger, "--as", "alice"), env=env)
        tmux.wait_for("session running", timeout=30, what="the live session in the header")
        # Let it get going: a few steps done, one in flight.
        deadline = time.monotonic() + 30
        while sum(r.get("kind") == "step_end" for r in journal(ledger)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        pressed = time.monotonic()
        tmux.send("S")
        screen = tmux.wait_for(lambda s: "session stopping (asked by alice)" in s or "session idle" in s
                               or "session dead" in s, timeout=20, what="the stop taken")
        code = session.wait(timeout=60)
        took = time.monotonic() - pressed
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
    records = journal(ledger)
    stop = next(r for r in records if r.get("kind") == "stop_request")
    assert stop["actor"] == "alice" and "stop requested by alice" in stop["msg"]
    after = [r for r in records if r.get("seq", 0) > stop["seq"]]
    # No step decided after the stop: a step_start's `rev` is the revision its intent was written
    # at. The step whose intent was on disk before the stop may still start and finish (the stop
    # can land between its intent and its spawn: seen in a full run), and only that one.
    assert not [r for r in records if r.get("kind") == "step_start" and r["rev"] > stop["rev"]], \
        "a step was decided after the stop request"
    late = [r for r in after if r.get("kind") == "step_start"]
    assert len(late) <= 1, f"more than the one step in flight started after the stop request: {late}"
    end = [r for r in after if r.get("kind") == "session_end"]
    assert len(end) == 1 and code == 0 and "stop requested by alice" in " ".join(r.get("msg", "") for r in after)
    done = sum(r.get("kind") == "step_end" for r in records)
    assert done < 40, "the session ran every step: the stop was not honoured"
    tmux.wait_for("session idle", timeout=20, what="the header after the session ended")
    print(f"\nstop: {took:.2f}s from S to the session's exit; {done} of 40 steps ran; screen when taken:\n{screen}")
