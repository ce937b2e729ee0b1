"""The whole app over a real ledger through the engine: what shows on open, and every action.

Each action test asserts on the screen and on the ledger and journal on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from textual.widgets import Button, Input, TextArea

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, journal_records, screen_text, settle
from tui.app import HandoffApp, make_app
from tui.screens.approve import ApproveScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.detail import DetailScreen
from tui.screens.error import ErrorScreen
from tui.screens.help import HelpScreen
from tui.screens.note_editor import NoteConflictScreen, NoteEditor
from tui.screens.reason import ReasonPrompt
from tui.widgets.header import HeaderBar
from tui.widgets.note_panel import NotePanel
from tui.widgets.target_table import TargetTable


def build(path: Path, **kw) -> HandoffApp:
    kw.setdefault("actor", "alice")
    return make_app(str(path), clock=fixed_clock, watch=False, **kw)


def on_disk(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))


async def select(pilot, name: str) -> None:
    assert pilot.app.main.table.move_to(name)
    await pilot.pause()


async def test_open_shows_header_summary_note_and_rows(ledger_path: Path) -> None:
    """On open: mode, environment, task, shift, summary, note with author, and the first rows."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "OPERATOR: alice" in text
    assert "environment: production" in text
    assert "tls-rotation" in text and "shift: night-oncall" in text
    assert "1 done · 1 awaiting_approval · 1 checked · 1 queued · 1 blocked · 2 failed" in text
    assert "Handoff note by bob at 2026-11-29 02:55Z" in text
    assert "Do NOT retry link on web-03" in text
    assert "web-01" in text and "⚑ awaiting_approval" in text


async def test_production_environment_has_danger_class(ledger_path: Path) -> None:
    """`environment: production` is styled with the danger colour (the header's danger component style)."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        header = app.main.query_one(HeaderBar)
        line = header.lines(120)[0]
        danger = header.get_component_rich_style("header--danger", partial=True)
        spans = [line.plain[s.start:s.end] for s in line.spans if s.style == danger]
        assert spans == [" environment: production "]


async def test_pause_and_unpause(ledger_path: Path) -> None:
    """p asks for a reason, pauses through the engine, shows who and why; p again unpauses."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        assert isinstance(app.screen, ReasonPrompt)
        await pilot.press(*"db maintenance", "enter")
        await settle(pilot)
        assert "PAUSED by alice" in screen_text(app) and "db maintenance" in screen_text(app)
        assert on_disk(ledger_path)["paused"]["why"] == "db maintenance"
        await pilot.press("p")  # unpausing is as deliberate as pausing: it asks first
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "Paused by alice: db maintenance" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert "PAUSED" not in screen_text(app)
    assert "paused" not in on_disk(ledger_path) or not on_disk(ledger_path)["paused"]
    kinds = [r["kind"] for r in journal_records(ledger_path)]
    assert "pause" in kinds and "unpause" in kinds


async def test_pause_needs_a_reason(ledger_path: Path) -> None:
    """An empty reason is refused in the prompt; nothing is written."""
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p", "enter")
        assert isinstance(app.screen, ReasonPrompt)
        assert "A reason is required" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
    assert ledger_path.read_bytes() == before


async def test_approve_irreversible_needs_the_target_name(ledger_path: Path) -> None:
    """The modal shows the exact argv and IRREVERSIBLE; approve stays disabled until the name is typed."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        text = screen_text(app)
        assert "IRREVERSIBLE" in text
        # The dialog's lines, between its left and right borders (the table shows beside it).
        argv = [line[line.index("█") + 1:line.rindex("█")].strip() for line in text.splitlines() if line.count("█") >= 2]
        start = argv.index("cutover")
        assert argv[start:start + 5] == ["cutover", "--target", "web-02", "--checkpoint", "0/9A3F2C10"]
        button = app.screen.query_one("#approve", Button)
        assert button.disabled
        await pilot.press(*"web-0")
        assert button.disabled
        await pilot.press("2")
        assert not button.disabled
        await pilot.press("enter", *"lag fine", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ApproveScreen)
    target = on_disk(ledger_path)["targets"]["web-02"]
    assert target["approvals"][0]["by"] == "alice"
    assert target["approvals"][0]["comment"] == "lag fine"


async def test_approve_is_journaled_without_error(ledger_path: Path) -> None:
    """An approval from the TUI lands in the journal and raises no error view."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-02")
        await pilot.press("a", *"web-02", "enter", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ErrorScreen)
    assert any(r["kind"] == "approval" and r.get("target") == "web-02" for r in journal_records(ledger_path))


async def test_approve_enter_alone_never_approves(ledger_path: Path) -> None:
    """Muscle memory (a, enter, enter) does not approve an irreversible step."""
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-02")
        await pilot.press("a", "enter", "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        await pilot.press("escape")
    assert ledger_path.read_bytes() == before


async def test_reject_with_reason_blocks(ledger_path: Path) -> None:
    """x asks for a reason; the target ends blocked with 'rejected by alice: ...'."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-02")
        await pilot.press("x", *"lag too high", "enter")
        await settle(pilot)
        assert app.main.table.row("web-02").state == "blocked"
    target = on_disk(ledger_path)["targets"]["web-02"]
    assert target["state"] == "blocked" and target["reason"] == "rejected by alice: lag too high"


async def test_block_and_unblock(ledger_path: Path) -> None:
    """b blocks the selected target with a reason; u puts it back in a chosen state."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-05")
        await pilot.press("b", *"hold", "enter")
        await settle(pilot)
        assert on_disk(ledger_path)["targets"]["web-05"]["state"] == "blocked"
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ReasonPrompt)
        await pilot.press(*"ticket closed", "enter")
        await settle(pilot)
        assert app.main.table.row("web-05").state == "queued"
    assert on_disk(ledger_path)["targets"]["web-05"]["state"] == "queued"


async def test_retry_reversible_failure(ledger_path: Path) -> None:
    """Outside production, r on a target that failed in a reversible step queues it again at once."""
    ledger_path.write_text(ledger_path.read_text("utf-8").replace("environment: production", "environment: staging"), "utf-8")
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-07")
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, ReasonPrompt)
    assert on_disk(ledger_path)["targets"]["web-07"]["state"] == "queued"


async def test_retry_irreversible_failure_needs_force_and_reason(ledger_path: Path) -> None:
    """The engine refuses a plain retry of a failed irreversible step; the TUI asks for a forced one with a reason."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-03")
        await pilot.press("r")  # production: asks first
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt) and "Retry web-03 in production?" in screen_text(app)
        await pilot.press(*"looked at it", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt)
        assert "half-happened" in screen_text(app)
        assert on_disk(ledger_path)["targets"]["web-03"]["state"] == "failed"
        await pilot.press(*"checked by hand: link never ran", "enter")
        await settle(pilot)
    assert on_disk(ledger_path)["targets"]["web-03"]["state"] == "checked"
    retry = [r for r in journal_records(ledger_path) if r["kind"] == "retry"]
    assert retry and retry[-1].get("forced") is True


async def test_edit_note_saves_with_author(ledger_path: Path) -> None:
    """e opens the editor; ctrl+s saves through the engine with the operator as author."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        assert isinstance(app.screen, NoteEditor)
        area = app.screen.query_one(TextArea)
        area.text = "All quiet. web-02 waits on cutover approval."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "All quiet." in screen_text(app)
    data = on_disk(ledger_path)
    assert data["handoff_note"].startswith("All quiet.") and data["handoff_note_by"] == "alice"


async def test_note_conflict_offers_both_and_never_overwrites(ledger_path: Path) -> None:
    """A note changed underneath while editing: both are shown; 'take theirs' keeps theirs on disk."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        open_ledger(str(ledger_path), actor="carol").set_note("carol's note")
        app.screen.query_one(TextArea).text = "alice's note"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, NoteConflictScreen)
        text = screen_text(app)
        assert "carol's note" in text and "alice's note" in text
        assert on_disk(ledger_path)["handoff_note"] == "carol's note"
        await pilot.press("t")
        await settle(pilot)
    assert on_disk(ledger_path)["handoff_note"] == "carol's note"


async def test_note_conflict_keep_mine_is_deliberate(ledger_path: Path) -> None:
    """'Keep mine' saves my text over theirs, based on theirs (so a third edit would conflict again)."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        open_ledger(str(ledger_path), actor="carol").set_note("carol's note")
        app.screen.query_one(TextArea).text = "alice's note"
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
    assert on_disk(ledger_path)["handoff_note"] == "alice's note"


async def test_note_conflict_merge_opens_editor_with_both(ledger_path: Path) -> None:
    """'Merge' opens the editor holding both texts."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        open_ledger(str(ledger_path), actor="carol").set_note("carol's note")
        app.screen.query_one(TextArea).text = "alice's note"
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, NoteEditor)
        merged = app.screen.query_one(TextArea).text
        assert "carol's note" in merged and "alice's note" in merged
        app.screen.query_one(TextArea).text = "both: carol + alice"
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert on_disk(ledger_path)["handoff_note"] == "both: carol + alice"


async def test_ack_note_is_journaled(ledger_path: Path) -> None:
    """N acknowledges the note: a journal record, and the panel says so."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("N")
        await settle(pilot)
        assert "acknowledged" in screen_text(app)
    assert any(r["kind"] == "note_ack" for r in journal_records(ledger_path))


async def test_note_panel_toggles_and_keeps_rows_visible(ledger_path: Path) -> None:
    """At 80x24 the note shows on open in one line, header and rows on screen; n expands it, n again folds it;
    on a tall screen n hides it."""
    app = build(ledger_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "✎ note by bob" in text and "OPERATOR" in text and "web-01" in text and "web-07" in text
        await pilot.press("n")
        await pilot.pause()
        assert "Handoff note by bob" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert "✎ note by bob" in screen_text(app)
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await pilot.pause()
        assert not app.main.query_one(NotePanel).display


async def test_request_stop_is_recorded(ledger_path: Path) -> None:
    """S asks the session to stop (the engine records it even with no session running) or says why not."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        if isinstance(app.screen, ErrorScreen):
            assert app.screen.error_title  # refused, with a reason shown in the error view
        else:
            assert any(r["kind"] in ("stop_request", "stop_requested", "request_stop") for r in journal_records(ledger_path))


async def test_detail_shows_fields_and_history(ledger_path: Path) -> None:
    """enter opens the detail with fields, evidence and the journal history of that target."""
    open_ledger(str(ledger_path), actor="bob").block("web-05", "disk check")
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-05")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        text = screen_text(app)
        assert "blocked by bob: disk check" in text
        assert "block" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_filter_key(ledger_path: Path) -> None:
    """/ opens the filter; typing narrows rows; escape clears it."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"state:failed")
        await pilot.pause()
        assert app.main.table.visible_names() == ["web-03", "web-07"]
        await pilot.press("enter")
        await pilot.press("escape")
        await pilot.pause()
        assert app.main.table.row_count == 7


async def test_help_lists_actions(ledger_path: Path) -> None:
    """? shows every key with its description."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for _ in range(6):  # the long tail scrolls
            await pilot.press("pagedown")
            await pilot.pause()
            text += screen_text(app)
        for words in ("Approve the selected", "Edit the handoff note", "Quit handoff-tui", "Command line", "enter",
                      "↑/k", "ctrl+p", "esc", ":approve TARGET"):
            assert words in text, words


async def test_theme_cycles(ledger_path: Path) -> None:
    """t cycles dark -> light -> high contrast."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.theme == "handoff-dark"
        await pilot.press("t")
        assert app.theme == "handoff-light"
        await pilot.press("t")
        assert app.theme == "handoff-high-contrast"


async def test_engine_refusal_shows_error_view(ledger_path: Path) -> None:
    """A refusal from the engine (blocking a done target) appears in the one error view."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "web-01")
        await pilot.press("b", *"x", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "done" in screen_text(app)


async def test_invalid_file_shows_banner_and_keeps_last_state(ledger_path: Path) -> None:
    """A file that stops parsing: a banner with file:line:col; the rows stay."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        ledger_path.write_text("task: x\ntargets: {a: [\n", encoding="utf-8")
        await pilot.press("R")
        await settle(pilot)
        text = screen_text(app)
        assert "LEDGER DOES NOT PARSE" in text and f"{ledger_path.name}:" in text
        assert "web-02" in text


async def test_since_you_last_looked(ledger_path: Path) -> None:
    """Second open by the same user lists what moved meanwhile."""
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("q")
    open_ledger(str(ledger_path), actor="bob").block("web-05", "hold")
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "Since you last looked" in text and "web-05: queued → blocked" in text
