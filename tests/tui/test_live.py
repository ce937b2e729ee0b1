"""Live updates with the real watch: another writer's change shows in place, the journal streams in."""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, screen_text, wait_until
from tui.app import make_app
from tui.widgets.log_pane import LogPane


async def test_external_change_updates_row_in_place(ledger_path: Path) -> None:
    """Another operator blocks a target: the row changes and is highlighted, the rest stay."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.main.table
        await wait_until(pilot, lambda: table.row_count == 7)
        open_ledger(str(ledger_path), actor="bob").block("web-05", "other shift says hold")
        await wait_until(pilot, lambda: table.row("web-05").state == "blocked")
        assert "web-05" in table._flash
        assert table.row("web-01").state == "done"


async def test_journal_streams_into_log_pane(ledger_path: Path) -> None:
    """A journal record written by someone else appears in the log pane."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(140, 40)) as pilot:
        log = app.main.query_one(LogPane)
        open_ledger(str(ledger_path), actor="bob").pause("smoke test")
        await wait_until(pilot, lambda: log.lines_seen >= 1)
        await wait_until(pilot, lambda: "ledger paused by bob" in screen_text(app))


async def test_broken_then_fixed_file(ledger_path: Path) -> None:
    """An edit that breaks the file shows the banner; fixing it removes the banner."""
    good = ledger_path.read_text("utf-8")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        banner = app.main.query_one("#banner-broken")
        await wait_until(pilot, lambda: app.main.table.row_count == 7)
        ledger_path.write_text(good.replace("targets:", "targets: [", 1), encoding="utf-8")
        await wait_until(pilot, lambda: banner.display)
        assert "web-02" in screen_text(app)
        ledger_path.write_text(good.replace("tls-rotation", "tls-rotation-2"), encoding="utf-8")
        await wait_until(pilot, lambda: not banner.display)
        await wait_until(pilot, lambda: "tls-rotation-2" in screen_text(app))
