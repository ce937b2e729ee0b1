"""A target changed outside the engine is marked in its row, needs a person, and its detail says what to run.

The mark is made the real way: a hand edit of the file (web-05 jumps from queued to
verified, a move no runbook step makes), then an engine write, which flags it
(engine.store.outside) with `changed_outside: {at, fields}`.
"""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.detail import DetailScreen


def edited_by_hand(ledger: Path) -> dict:
    """Flag web-05 through the engine; returns its mark as the file now holds it."""
    handle = open_ledger(str(ledger), actor="alice")
    handle.pause("maintenance")
    ledger.write_text(ledger.read_text().replace("web-05: {state: queued}", "web-05: {state: verified}"))
    handle.unpause()
    mark = open_ledger(str(ledger), read_only=True).load().targets["web-05"].changed_outside
    assert mark and mark["fields"] == ["state"], mark
    return mark


async def web05_detail(ledger: Path, size: tuple[int, int]) -> str:
    """web-05's detail view as on screen, its lines joined."""
    app = make_app(str(ledger), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-05")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        return " ".join(screen_text(app).split())


def row_line(app, name: str) -> str:
    return next(line for line in screen_text(app).splitlines() if line.lstrip(" ▌▶").startswith(name + " "))


async def test_the_row_says_so_and_it_needs_a_person(ledger_path: Path) -> None:
    edited_by_hand(ledger_path)
    before = ledger_path.read_bytes()
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.main.table
        assert "changed outside the engine" in row_line(app, "web-05")
        assert "web-05" in table.attention()  # `verified` alone needs nobody; changed by hand, it does
        table.move_to("web-04")
        await pilot.press("right_square_bracket")
        assert table.cursor_name == "web-05"
        table.set_filter("is:attention")
        assert "web-05" in table.visible_names()
        table.set_filter("is:outside")
        assert table.visible_names() == ["web-05"]
    assert ledger_path.read_bytes() == before


async def test_the_detail_shows_when_what_and_the_reconcile_command(ledger_path: Path) -> None:
    mark = edited_by_hand(ledger_path)
    detail = await web05_detail(ledger_path, (120, 40))
    assert "CHANGED OUTSIDE THE ENGINE" in detail
    assert mark["at"][:16].replace("T", " ") in detail or mark["at"][11:16] in detail, (mark, detail)
    assert "fields state" in detail
    assert f"handoff reconcile {ledger_path} web-05 --to STATE --reason WHY" in detail


async def test_a_hand_made_mark_of_odd_shape_is_shown_as_text(ledger_path: Path) -> None:
    """The mark is file data: markup and escapes in it are shown as text, never obeyed."""
    ledger_path.write_text(ledger_path.read_text().replace(
        "web-05: {state: queued}", 'web-05: {state: queued, changed_outside: {at: "[red]x\\e[2J", fields: "[b]state"}}'))
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "web-05" in app.main.table.attention()
        app.main.table.move_to("web-05")
        await pilot.press("enter")
        await settle(pilot)
        detail = screen_text(app)
        assert "[red]x" in detail and "[b]state" in detail and "\x1b" not in detail


async def test_the_reconcile_command_pastes_for_a_ledger_in_a_folder_with_a_space(ledger_path: Path, tmp_path: Path) -> None:
    """The detail's line is shell words to paste: a path with a space is quoted, one word."""
    spaced = tmp_path / "on call" / "ledger.yaml"
    spaced.parent.mkdir()
    spaced.write_bytes(ledger_path.read_bytes())
    edited_by_hand(spaced)
    detail = await web05_detail(spaced, (160, 40))
    assert f"handoff reconcile '{spaced}' web-05 --to STATE --reason WHY" in detail, detail
