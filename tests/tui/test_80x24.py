"""At 80x24 the first screen shows what needs a person first.

The cursor's page holds every awaiting, failed, blocked and drifted row (sorted by
state when ledger order would scatter them past one page); the handoff note takes
one line with a key to expand it; the row under the cursor has its next action in
full under the table.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app
from tui.widgets.note_panel import NotePanel

DEMO = Path(__file__).resolve().parents[2] / "ledgers" / "demo"
LONG_NEXT = ("wait for the app team's written go in PLAT-4412, then verify lag under 5s twice, "
             "then cutover at the checkpoint recorded here and nowhere else")


def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    path = folder / "ledger.yaml"
    text = path.read_text("utf-8")
    old = 'db-18: {state: replicating, checkpoint: "0/9A3F2C10",'
    assert old in text
    text = text.replace(old, 'db-18: {state: awaiting_approval, awaiting: cutover, awaiting_by: "agent:test", '
                             'checkpoint: "0/9A3F2C10",')
    text = text.replace('next_action: "verify lag < 5s then cutover"}', f'next_action: "{LONG_NEXT}"}}', 1)
    # A drift far down the fleet: in ledger order it would sit pages below the others.
    text = text.replace("  db-38: {", '  db-38: {reason: "checkpoint drift: the ledger says 0/1, probe says 0/2", ', 1)
    path.write_text(text, "utf-8")
    return path


async def test_the_first_page_holds_every_row_that_needs_a_person(tmp_path: Path) -> None:
    app = make_app(str(demo(tmp_path)), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main.table
        needing = table.attention()
        assert {"db-18", "db-20", "db-27", "db-38"} <= set(needing)
        top = int(table.scroll_y)
        page = table.visible_names()[top:top + table.scrollable_content_region.height - 1]
        assert set(needing) <= set(page), (needing, page)
        assert table.cursor_name == needing[0]


async def test_the_note_is_one_line_and_n_expands_it(tmp_path: Path) -> None:
    app = make_app(str(demo(tmp_path)), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        panel = app.main.query_one(NotePanel)
        assert panel.region.height == 1
        assert "n expands" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert panel.region.height > 1
        await pilot.press("n")
        await pilot.pause()
        assert panel.region.height == 1


async def test_the_cursor_row_has_its_next_action_in_full(tmp_path: Path) -> None:
    app = make_app(str(demo(tmp_path)), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.main.table.move_to("db-18")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert LONG_NEXT in text


async def test_a_blocked_or_failed_row_says_why_and_what_moves_it(tmp_path: Path) -> None:
    """db-20 (blocked by hand, no next action recorded) opened the screen with only its state:
    at 80 columns the table has no reason column. The row and the line under the table now
    say what moves it, and the line says why it stopped (after the next action, which is never
    cut); a recorded next action (db-27's) is kept, with the reason after it."""
    app = make_app(str(demo(tmp_path)), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main.table
        assert all(column.key != "reason" for column in table._columns)  # the premise: no room for it here
        table.move_to("db-20")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "▶ db-20 ⊘ blocked next: a person unblocks it (u); nothing runs until then " \
               "why: pending app-team ack (ticket PLAT-4412)" in text
        assert table.row("db-20").next_action == "a person unblocks it (u); nothing runs until then"
        table.move_to("db-27")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "why: pg_upgrade --check: aclitem columns in user tables (format changed in 16)" in text
        assert "next: app team drops or converts the aclitem columns (PLAT-4431), then handoff retry db-27" in text
