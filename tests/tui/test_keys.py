"""Keys people already have in their fingers: vim/k9s moves, the `:` line, `/`, `]`/`[`, y/Y, and the safety around them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from textual.command import CommandPalette
from textual.widgets import Input, TextArea

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, journal_records, screen_text, settle
from tui.app import make_app
from tui.main import parse_args
from tui.screens.approve import ApproveScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.note_editor import NoteEditor
from tui.screens.reason import ReasonPrompt
from tui.widgets.note_panel import NotePanel

DEMO = Path(__file__).resolve().parents[2] / "ledgers" / "demo" / "ledger.yaml"


def build(path: Path, **kw):
    kw.setdefault("actor", "alice")
    return make_app(str(path), clock=fixed_clock, watch=False, **kw)


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_vim_and_k9s_moves(tmp_path: Path) -> None:
    """j/k, g/G, ctrl+d/ctrl+u move the cursor over the 40-target demo fleet."""
    path = tmp_path / "ledger.yaml"
    path.write_text(DEMO.read_text("utf-8"), encoding="utf-8")
    app = build(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main.table
        await pilot.press("g")
        assert table.cursor_name == "db-01"
        await pilot.press("j", "j", "k")
        assert table.cursor_name == "db-02"
        await pilot.press("ctrl+d")
        half = table.cursor
        assert half > 2
        await pilot.press("ctrl+u")
        assert table.cursor_name == "db-02"
        await pilot.press("G")
        assert table.cursor_name == "db-40"


async def test_colon_approve_opens_the_dialog_and_never_approves(ledger_path: Path) -> None:
    """`:approve web-02` opens the approval dialog for web-02; nothing is written until it is confirmed."""
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *"approve web-02", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen) and app.screen.target_name == "web-02"
        await pilot.press("escape")
        await settle(pilot)
    assert ledger_path.read_bytes() == before


async def test_colon_filter_sort_goto_theme_and_quit(ledger_path: Path) -> None:
    """`:filter failed`, `:sort state`, `:web-04`, `:theme handoff-light`, `:q` do what they say."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.table
        await pilot.press("colon", *"filter state:failed", "enter")
        await pilot.pause()
        assert table.visible_names() == ["web-03", "web-07"]
        await pilot.press("colon", *"filter", "enter", "colon", *"sort state", "enter")
        await pilot.pause()
        assert table.visible_names()[:4] == ["web-02", "web-03", "web-07", "web-04"]
        await pilot.press("colon", *"web-06", "enter")
        await pilot.pause()
        assert table.cursor_name == "web-06"
        await pilot.press("colon", *"theme handoff-light", "enter")
        await pilot.pause()
        assert app.theme == "handoff-light"
        await pilot.press("colon", *"nonsense", "enter")
        await pilot.pause()
        assert any(n.startswith("unknown command :nonsense") for n in notes(app))
        await pilot.press("colon", "q", "enter")
        await settle(pilot)
    assert app.return_code == 0 and not app.is_running


async def test_colon_completes_and_offers_nothing_mutating_when_read_only(ledger_path: Path) -> None:
    """Tab completes `:ap` to `:approve` (and the awaiting target); read-only has no :approve at all."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon", "a", "p")
        await settle(pilot)  # the suggester answers in a worker
        await pilot.press("right")  # accept the suggestion, as Input does
        await pilot.press("space", "w")
        await settle(pilot)  # the suggester answers in a worker
        await pilot.press("right")
        assert app.main.query_one("#cmdline", Input).value == "approve web-02"
    app = build(ledger_path, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *"approve web-02", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ApproveScreen)
        assert any(n.startswith("read-only: :approve changes the ledger") for n in notes(app))
        await pilot.press("colon", "a", "p")
        await settle(pilot)  # the suggester answers in a worker
        await pilot.press("right")
        assert app.main.query_one("#cmdline", Input).value == "ap"


async def test_slash_can_be_typed_in_the_filter_and_the_count_shows(ledger_path: Path) -> None:
    """`0/9A3F` is typed as it is (not `/09A3F`), finds the checkpoint, and the box counts the matches."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "0", "slash", "9", "A", "3", "F")
        await pilot.pause()
        box = app.main.query_one("#filter", Input)
        assert box.value == "0/9A3F"
        assert app.main.table.visible_names() == ["web-02"]
        assert box.border_subtitle == "1 of 7 match" and "1 of 7 match" in screen_text(app)


async def test_slash_then_keys_in_one_burst_filter_and_never_act(ledger_path: Path) -> None:
    """`/web` typed in one burst filters; `b` (block) never runs on the table."""
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "b", "l", "o")
        await pilot.pause()
        assert not isinstance(app.screen, ReasonPrompt)
        assert app.main.query_one("#filter", Input).value == "blo"
    assert ledger_path.read_bytes() == before


async def test_brackets_jump_between_targets_that_need_a_human(ledger_path: Path) -> None:
    """`]` and `[` visit awaiting, failed and blocked targets only, wrapping around."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.table
        assert table.cursor_name == "web-02"  # opened on the first that needs a human
        visited = []
        for _ in range(5):
            await pilot.press("right_square_bracket")
            visited.append(table.cursor_name)
        assert visited == ["web-03", "web-04", "web-07", "web-02", "web-03"]
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert table.cursor_name == "web-07"


async def test_escape_in_the_note_editor_asks_before_throwing_edits_away(ledger_path: Path) -> None:
    """Esc with unsaved edits asks; "keep editing" keeps them; an untouched note closes at once."""
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("e", "escape")
        await settle(pilot)
        assert app.screen is app.main
        await pilot.press("e", *" more")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "Discard your edits" in screen_text(app)
        await pilot.press("escape")  # no: keep editing
        await settle(pilot)
        assert isinstance(app.screen, NoteEditor) and app.screen.text.endswith(" more")
        await pilot.press("escape", "y")
        await settle(pilot)
        assert app.screen is app.main
    assert ledger_path.read_bytes() == before


async def test_note_editor_shows_and_saves_stand_ins_for_control_characters(ledger_path: Path) -> None:
    """A note holding ESC[2J opens as `␛[2J` (nothing raw reaches the terminal); saving keeps the stand-in."""
    open_ledger(str(ledger_path), actor="bob").set_note("clear \x1b[2J screen \u202eevil")
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        area = app.screen.query_one(TextArea)
        assert area.text == "clear ␛[2J screen <U+202E>evil" and "\x1b" not in screen_text(app)
        area.insert(" ok", area.document.end)
        await pilot.press("ctrl+s")
        await settle(pilot)
    note = yaml.safe_load(ledger_path.read_text("utf-8"))["handoff_note"]
    assert note == "clear ␛[2J screen <U+202E>evil ok"


async def test_read_only_refusals_say_so_and_the_note_panel_offers_only_hide(ledger_path: Path) -> None:
    """Every mutating key says "read-only: ..."; the note panel offers `n hide` only."""
    app = build(ledger_path, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert str(app.main.query_one(NotePanel).border_subtitle) == "n hide"
        app.main.table.move_to("web-03")
        for key in ("a", "x", "e", "N", "p", "r", "b", "u", "U", "s", "S"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is app.main, key
        said = [n for n in notes(app) if n.startswith("read-only: ")]
        assert len(said) == 11 and all("(--read-only)" in n for n in said)


async def test_production_unblock_and_unpause_ask_and_say_production(ledger_path: Path) -> None:
    """In production, unblock and unpause name the environment in their question; both wait for a yes."""
    open_ledger(str(ledger_path), actor="bob").pause("maintenance")
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-04")
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt) and "Unblock web-04 in production" in screen_text(app)
        await pilot.press("escape", "p")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "Unpause the ledger (environment: production)?" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
    assert yaml.safe_load(ledger_path.read_text("utf-8"))["paused"]["why"] == "maintenance"


async def test_palette_has_one_theme_entry(ledger_path: Path) -> None:
    """The command palette offers "Theme (t)" once: Textual's own theme command is not added beside it."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"theme")
        await pilot.pause(0.3)  # the palette searches in its own worker
        await settle(pilot)
        hits = [line for line in screen_text(app).splitlines() if re.search(r"\btheme\b", line, re.I)]
        titles = [line for line in hits if "Theme (t)" in line or "Change theme" in line or line.strip().startswith("Theme")]
        assert len(titles) == 1, hits


async def test_sort_by_state_keeps_the_cursor_in_its_queue_after_an_approval(ledger_path: Path) -> None:
    """Sorted by state, approving the first awaiting target leaves the cursor on the next awaiting one."""
    text = ledger_path.read_text("utf-8")
    text = text.replace("web-06: {state: checked,", "web-06: {state: awaiting_approval, awaiting: link, awaiting_by: agent,")
    text = text.replace("web-05: {state: queued}", "web-05: {state: awaiting_approval, awaiting: link, awaiting_by: agent, "
                                                  "checkpoint: '0/1'}")
    ledger_path.write_text(text, encoding="utf-8")
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("o")  # sort by state
        table = app.main.table
        assert table.visible_names()[:3] == ["web-02", "web-05", "web-06"]
        table.move_to("web-05")
        await pilot.press("a", *"web-05", "enter", "enter")
        await settle(pilot)
        assert table.row("web-05").state == "checked"
        assert table.cursor_name == "web-06"


async def test_y_and_shift_y_copy_the_name_and_the_pending_command(ledger_path: Path) -> None:
    """`y` copies the target's name, `Y` its pending command (through the app's OSC 52 clipboard)."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-02")
        await pilot.press("y")
        assert app.clipboard == "web-02"
        await pilot.press("Y")
        assert app.clipboard == "cutover --target web-02 --checkpoint 0/9A3F2C10"
        app.main.table.move_to("web-01")
        await pilot.press("Y")
        assert app.clipboard == "cutover --target web-02 --checkpoint 0/9A3F2C10"  # done: nothing would run
        assert any("No command would run next on web-01" in n for n in notes(app))


async def test_bell_rings_once_when_a_new_approval_starts_waiting(ledger_path: Path) -> None:
    """A target starts waiting on approval: one bell, and the header counts it; `--no-bell` keeps quiet."""
    assert parse_args(["x.yaml", "--no-bell"]).bell is False and parse_args(["x.yaml"]).bell is True
    for bell, rings in ((True, 1), (False, 0)):
        path = ledger_path.parent / f"bell-{bell}.yaml"
        path.write_text(ledger_path.read_text("utf-8"), encoding="utf-8")
        app = build(path, bell=bell)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            assert app.bells == 0 and "⚑ 1 awaiting" in app.main.header_text()
            path.write_text(path.read_text("utf-8").replace(
                "web-06: {state: checked,", "web-06: {state: awaiting_approval, awaiting: link, awaiting_by: agent,"), "utf-8")
            app.reload()
            await settle(pilot)
            app.reload()
            await settle(pilot)
            assert app.bells == rings and "⚑ 2 awaiting" in app.main.header_text()


async def test_unpause_is_journaled_after_the_yes(ledger_path: Path) -> None:
    """Outside production too, unpause asks; the yes unpauses and is journaled."""
    ledger_path.write_text(ledger_path.read_text("utf-8").replace("environment: production", "environment: staging"), "utf-8")
    open_ledger(str(ledger_path), actor="bob").pause("maintenance")
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
    assert [r["kind"] for r in journal_records(ledger_path)].count("unpause") == 1
