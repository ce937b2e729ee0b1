"""`q` quits even while another process of the same user holds the lock of their "since you
last looked" mark and is stopped: the save gives up after its bound, the log says why, and the
stored mark is the one from before (unbounded, q hung the screen for as long as the holder slept)."""

from __future__ import annotations

from pathlib import Path

from engine.host import userstate
from tests.conftest import stopped_holder
from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app


async def test_q_quits_while_a_stopped_process_holds_the_marks_lock(ledger_path: Path) -> None:
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    key = app.controller.user_state_key
    userstate.advance_user_state(key, {"seen_at": "2026-12-01T09:00:00+00:00", "mark": "before"})
    with stopped_holder(userstate._file(key).with_suffix(".lock")):
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("q")
            await settle(pilot)
        assert not app.is_running
        assert userstate.load_user_state(key)["mark"] == "before"
