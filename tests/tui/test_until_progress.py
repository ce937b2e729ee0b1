"""The target detail shows a running `until` step's newest reading, and the next as it is journaled."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, cli_env, handoff
from tests.tui.helpers import screen_text, settle
from tests.unit.test_until_progress import fleet, readings
from tui.app import make_app
from tui.screens.detail import DetailScreen


def wait_for_readings(path: Path, count: int) -> None:
    for _ in range(600):  # a loop bound, never a timing assertion
        if len(readings(path)) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} readings were journaled")


async def test_the_detail_shows_the_reading_elapsed_time_and_deadline(tmp_path: Path) -> None:
    path = fleet(tmp_path, 100000, interval=0.3)
    session = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", str(path)], cwd=str(ROOT),
                               env=cli_env(HANDOFF_UNTIL_PROGRESS_EVERY="0"), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_for_readings(path, 1)
        app = make_app(str(path), actor="alice", watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert app.main.table.move_to("n1")
            await pilot.pause()
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen)
            line = next((ln for ln in screen_text(app).splitlines() if "until  n1: roll reading" in ln), None)
            assert line is not None, screen_text(app)
            assert "waiting for value < 1; " in line and "elapsed, deadline 20" in line
            first = float(line.split("roll reading ")[1].split(" ")[0])
            seen = len(readings(path))
            wait_for_readings(path, seen + 1)
            newest = readings(path)[-1]["value"]
            app.reload()  # what R does: the journal is read again, its new records reach the detail
            await settle(pilot)
            line = next(ln for ln in screen_text(app).splitlines() if "until  n1: roll reading" in ln)
            shown = float(line.split("roll reading ")[1].split(",")[0])
            assert shown <= newest < first  # a countdown: the detail moved on to a reading at least as new
    finally:
        handoff("stop", path)
        session.wait(timeout=120)
