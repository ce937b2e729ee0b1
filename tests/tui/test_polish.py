"""The TUI's later additions: unapprove, budget used in the header, the ticking age column, the journal tail."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import yaml

from engine.api import open_ledger
from tests.tui.helpers import FIXED_NOW, fixed_clock, journal_records, screen_text, settle, wait_until
from tui.app import make_app
from tui.messages import Snapshot
from tui.widgets.log_pane import LogPane
from tui.widgets.target_table import TargetTable


def on_disk(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))


async def test_unapprove_withdraws_an_unused_approval(ledger_path: Path) -> None:
    """U on a target holding an unused approval withdraws it; the ledger and journal say so."""
    open_ledger(str(ledger_path), actor="carol").approve("web-02", comment="go")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("U")
        await settle(pilot)
    assert on_disk(ledger_path)["targets"]["web-02"].get("approvals", []) == []
    assert [r["actor"] for r in journal_records(ledger_path) if r["kind"] == "unapproval"] == ["alice"]


async def test_unapprove_without_approval_says_so(ledger_path: Path) -> None:
    """U on a target with nothing to withdraw writes nothing and tells the operator."""
    before = ledger_path.read_bytes()
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-05")
        await pilot.press("U")
        await settle(pilot)
        assert any("web-05 holds no unused approval" in n.message for n in app._notifications)
    assert ledger_path.read_bytes() == before


async def test_unapprove_is_offered_only_to_operators(ledger_path: Path) -> None:
    """Unapprove is in the help and palette source for an operator, absent when read-only."""
    for read_only, offered in ((False, True), (True, False)):
        app = make_app(str(ledger_path), actor="alice", read_only=read_only, clock=fixed_clock, watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            actions = [a.name for a in app.main.visible_actions()]
        assert ("unapprove" in actions) is offered


class FakeLease:
    status, holder, detail, heartbeat_age, budget_used, phase = "live", "agent:alice@host", "x", 3.0, 0.42, "waiting on cutover"


async def test_header_shows_budget_used_and_phase(ledger_path: Path) -> None:
    """A live session's budget used (from its heartbeat) and phase show in the header."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        ledger = app.main.ledger
        app.main.show_snapshot(Snapshot(ledger, [], FakeLease()))
        await pilot.pause()
        header = app.main.header_text()
    assert "● session running" in header and "agent:alice@host" in header
    assert "waiting on cutover" in header and "budget 42% used" in header


async def test_age_column_ticks_without_rebuilding_rows(ledger_path: Path) -> None:
    """As the clock moves, the age cells change on screen while rows and their cached cells stay."""
    now = [FIXED_NOW]
    app = make_app(str(ledger_path), actor="alice", clock=lambda: now[0], watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TargetTable)
        rows, cached = table._rows, dict(table._line_cache)
        def row() -> str:  # the table part of web-03's line (the side pane is right of ▏)
            line = next(line for line in screen_text(app).splitlines() if line.lstrip("▌ ").startswith("web-03"))
            return line.split("▏")[0].rstrip()

        assert row().endswith("50m")
        now[0] = FIXED_NOW + timedelta(hours=5)
        table._tick_age()
        await pilot.pause()
        assert row().endswith("5h")
        assert table._rows is rows and all(table._line_cache.get(k) is v for k, v in cached.items())


async def test_log_pane_shows_the_tail_not_the_whole_journal(ledger_path: Path) -> None:
    """On open the log pane shows the journal's last 200 records, then follows new ones."""
    handle = open_ledger(str(ledger_path), actor="tester")
    for i in range(450):
        handle.journal.append("log", f"old record {i:03d}", actor="tester")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(160, 50)) as pilot:
        log = app.main.query_one(LogPane)  # the journal worker keeps running while following: wait on what it shows
        await wait_until(pilot, lambda: log.lines_seen, timeout=20)
        assert log.lines_seen == 200
        handle.journal.append("log", "a brand new record", actor="tester")
        await wait_until(pilot, lambda: log.lines_seen == 201, timeout=20)
        assert "a brand new record" in log._records[-1]["msg"]
        assert log._records[0]["msg"] == "old record 250"
