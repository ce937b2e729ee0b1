"""The timeline screen: the real journal page by page, ledger text shown as data, the targets at a
past revision, one target's records from its detail or `:timeline NAME`, and nothing written."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, journal_records, screen_text, settle
from tui.app import make_app
from tui.screens.detail import DetailScreen
from tui.screens.timeline import PAGE, StateLoaded, TimelineScreen

HOSTILE = "[red]boom[/] \x1b[2J"


def busy(ledger_path: Path, rounds: int = 60) -> int:
    """`rounds` block/unblock pairs by another operator: a journal longer than one page."""
    bob = open_ledger(str(ledger_path), actor="bob")
    for i in range(rounds):
        bob.block("web-05", f"hold {i} {HOSTILE}")
        bob.unblock("web-05", "queued", f"go {i}")
    return len(journal_records(ledger_path))


def folder_bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.iterdir() if p.is_file()}


async def open_timeline(app, pilot) -> tuple[TimelineScreen, DataTable]:
    """T on the main screen, once it has settled: the timeline screen and its table."""
    await settle(pilot)
    await pilot.press("T")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    return screen, screen.query_one(DataTable)


async def test_pages_hostile_text_and_state_then(ledger_path: Path) -> None:
    """T opens the newest page; [ and ] page; markup and escapes in the journal show as text; enter
    rebuilds the targets at the selected revision; the ledger's folder is byte-identical afterwards."""
    total = busy(ledger_path)
    assert total > PAGE
    before = folder_bytes(ledger_path)
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 50)) as pilot:
        screen, table = await open_timeline(app, pilot)
        assert table.row_count == PAGE and screen.page.start == total - PAGE
        text = screen_text(app)
        assert f"records {total - PAGE + 1}–{total} of {total}" in text
        assert "[red]boom[/] ␛[2J" in text  # data, not markup; the escape made visible
        assert "\x1b" not in text
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.page.start == max(0, total - 2 * PAGE)
        first_seq = screen.page.records[0]["seq"]
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.page.start == total - PAGE and screen.page.records[0]["seq"] > first_seq
        # The newest record is selected: the state then is the ledger as it is now.
        await pilot.press("enter")
        await settle(pilot)
        state = str(screen.query_one("#timeline-state", Static).render())
        assert f"At revision {app.main.ledger.revision}" in state and "web-05: queued" in state
        # A block record on this page: the state then is blocked, with that record's revision.
        row = next(i for i, r in enumerate(screen.page.records) if r.get("kind") == "block" and isinstance(r.get("rev"), int))
        table.move_cursor(row=row)
        await pilot.press("enter")
        await settle(pilot)
        state = str(screen.query_one("#timeline-state", Static).render())
        assert f"At revision {screen.page.records[row]['rev']}" in state and "web-05: blocked" in state
        # Another page: the state then was of a record no longer shown, and goes.
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert str(screen.query_one("#timeline-state", Static).render()) == ""
        assert "At revision" not in screen_text(app)
        # A state asked for on the page before that arrives only now is not shown either.
        screen.post_message(StateLoaded(1, {"web-05": {"state": "blocked"}}, screen._pages - 1))
        await settle(pilot)
        assert "At revision" not in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.main
    assert folder_bytes(ledger_path) == before


async def test_one_targets_timeline_from_detail_and_command(ledger_path: Path) -> None:
    """T in web-05's detail, and :timeline web-05 (also read-only), list only web-05's records."""
    busy(ledger_path, rounds=3)
    open_ledger(str(ledger_path), actor="bob").block("web-06", "other")
    app = make_app(str(ledger_path), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        app.main.open_detail("web-05")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("T")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.target == "web-05"
        assert screen.page.records and {r.get("target") for r in screen.page.records} == {"web-05"}
        await pilot.press("escape", "escape")
        await settle(pilot)
        app.main.run_line(":timeline web-06")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        assert {r.get("target") for r in app.screen.page.records} == {"web-06"}
        assert "Journal timeline of web-06 (read-only)" in screen_text(app)


def in_view(table: DataTable) -> range:
    """The rows the table shows now (its scroll position and height, less the header)."""
    first = round(table.scroll_y)
    return range(first, first + table.scrollable_content_region.height - (1 if table.show_header else 0))


async def test_at_80x24_every_row_fits_and_the_cursor_stays_in_view(ledger_path: Path) -> None:
    """At 80x24 the timeline never scrolls sideways (a horizontal scrollbar that came after the
    cursor was scrolled into view hid the newest row): "What" is cut with `…` and the selected
    record is shown below the table. The cursor's row stays in view when the state then is
    shown and when the terminal grows or shrinks; a wider terminal shows more of "What", and
    a narrower one again less."""
    busy(ledger_path)
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, table = await open_timeline(app, pilot)
        newest = screen.page.records[-1]
        assert table.cursor_row == len(screen.page.records) - 1
        assert table.max_scroll_x == 0 and not table.show_horizontal_scrollbar
        assert table.cursor_row in in_view(table)
        cut = table.get_row_at(table.cursor_row)[-1]
        assert cut.plain.endswith("…") and newest["msg"].startswith(cut.plain[:-1])
        record = str(screen.query_one("#timeline-record", Static).render())
        assert newest["msg"] in record.replace("\n", "")  # the whole message, wrapped below the table
        await pilot.press("up", "up", "enter")
        await settle(pilot)
        assert "At revision" in str(screen.query_one("#timeline-state", Static).render())
        chosen = table.cursor_row
        assert chosen == len(screen.page.records) - 3 and chosen in in_view(table)
        assert screen.page.records[chosen]["msg"] in str(screen.query_one("#timeline-record", Static).render()).replace("\n", "")
        await pilot.resize_terminal(160, 30)
        await settle(pilot)
        assert table.cursor_row == chosen and chosen in in_view(table)
        assert table.get_row_at(chosen)[-1].plain == screen.page.records[chosen]["msg"]  # room for all of it now
        assert table.max_scroll_x == 0
        await pilot.resize_terminal(80, 24)  # and back: the wide "What" must not stay wide
        await settle(pilot)
        assert table.max_scroll_x == 0 and table.get_row_at(chosen)[-1].plain.endswith("…")
        assert table.cursor_row == chosen and chosen in in_view(table)
        # A new width met while the rows are being put back (clear() left the cursor on row 0; the
        # move to its row waits for the refresh) keeps the row that was asked for, not row 0.
        screen._fill(chosen)
        screen._fitted = -1  # as if the terminal's width changed in between
        screen.on_resize()
        await settle(pilot)
        assert table.cursor_row == chosen and chosen in in_view(table)
