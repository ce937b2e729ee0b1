"""Leaving the demo: it asks while a step runs, and ending it empties the demo's process group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app
from tui.demo import DemoRun, running_steps
from tui.screens.confirm import ConfirmScreen

# A stand-in for the demo's script: it starts a child (as the script starts sessions) and waits.
SCRIPT = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); time.sleep(120)"


def a_demo(ledger: Path) -> DemoRun:
    demo = DemoRun(ledger)
    demo.proc = subprocess.Popen([sys.executable, "-c", SCRIPT], start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return demo


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_quitting_asks_while_a_demo_step_runs_and_the_group_ends(ledger_path: Path) -> None:
    """A step in flight: q asks; "Stay" stays; yes quits, and stopping the demo leaves no process in its group."""
    text = ledger_path.read_text("utf-8").replace("web-05: {state: queued}",
                                                  "web-05: {state: queued, in_flight: {step: check, pid: 1}}")
    ledger_path.write_text(text, encoding="utf-8")
    demo = a_demo(ledger_path)
    try:
        app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
        app.demo = demo
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            assert running_steps(app.main.ledger) == ["web-05 (check)"]
            await pilot.press("q")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen) and "A step is running: web-05 (check)" in screen_text(app)
            await pilot.press("escape")
            await settle(pilot)
            assert app.is_running and app.screen is app.main
            await pilot.press("q", "y")
            await settle(pilot)
        assert not app.is_running
        assert demo.alive()
        assert demo.stop(grace=10) and not group_alive(demo.pgid)
    finally:
        if group_alive(demo.pgid):
            os.killpg(demo.pgid, 9)


async def test_quitting_a_demo_with_nothing_running_does_not_ask(ledger_path: Path) -> None:
    """No step in flight: q quits at once (main() then ends the demo)."""
    demo = a_demo(ledger_path)
    try:
        app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
        app.demo = demo
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("q")
            await settle(pilot)
        assert not app.is_running
    finally:
        demo.stop(grace=10)
    assert not group_alive(demo.pgid)
