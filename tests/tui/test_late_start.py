"""The first frame's callback starts the screen's workers (the journal's follower, the watch,
the chain checks). When the app has already stopped by then (a quit, a SIGTERM, or a browser
viewer's server stopping it right after its first frame), it starts none: Textual cancelled
its workers when it stopped, and a follower started later would poll for ever, so the
process would never end (a served viewer's process outlived its server this way)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.tui.helpers import fixed_clock, wait_until
from tui.app import make_app
from tui.messages import JournalRecords


async def test_an_app_that_has_stopped_starts_no_worker(ledger_path: Path) -> None:
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(100, 30)) as pilot:
        # While it runs, the journal is followed (its follower never finishes: no settle here).
        await wait_until(pilot, lambda: any(w.group == "journal" and w.is_running for w in app.workers))
    assert not app.is_running
    app._start_workers()  # the first frame's callback, come after the stop
    try:
        await asyncio.sleep(1.0)  # a follower polls four times a second
        left = [f"{w.group}: {w.description}" for w in app.workers if not w.is_finished]
        assert not left, f"workers started after the app stopped: {left}"
    finally:
        for worker in list(app.workers):
            worker.cancel()
        await asyncio.sleep(0.5)  # a cancelled follower sees it within one poll


async def test_journal_records_that_arrive_after_the_screens_are_gone_are_dropped(ledger_path: Path) -> None:
    """The journal's follower posts records from its thread; one that lands while the app
    stops, its screens already gone, is dropped, not raised into the app's exit (it made
    a quit end with "ScreenStackError: No screens on stack" once in a busy full run)."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(100, 30)):
        pass
    assert not app.is_running and not app.screen_stack
    app.on_journal_records(JournalRecords([{"seq": 99, "kind": "note", "msg": "late"}]))
