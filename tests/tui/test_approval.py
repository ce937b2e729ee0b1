"""The approval dialog tells the whole truth, fits 80x24, and follows the live ledger; the detail view too."""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.widgets import Button, Input

from engine.api import open_ledger
from tests.tui.helpers import LEDGER, fixed_clock, journal_records, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen
from tui.screens.detail import DetailScreen
from tui.screens.error import ErrorScreen
from tui.screens.invariants import InvariantsScreen
from tui.screens.note_editor import NoteEditor
from tui.screens.reason import ReasonPrompt
from tui.widgets.argv_view import CONTINUED, argv_lines
from tui.widgets.keybar import KeyBar

LONG_NAME = "prod-eu-west-1-postgres-primary-cluster-with-a-really-long-name-0001"


def build(path: Path, **kw):
    kw.setdefault("actor", "alice")
    return make_app(str(path), clock=fixed_clock, watch=False, **kw)


async def open_dialog(pilot, name: str = "web-02") -> ApproveScreen:
    await settle(pilot)
    assert pilot.app.main.table.move_to(name)
    await pilot.press("a")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ApproveScreen)
    return pilot.app.screen


def dialog_lines(app) -> list[str]:
    """The dialog's lines, inside its frame (the screen behind it left out)."""
    out = []
    for line in screen_text(app).splitlines():
        if line.count("█") >= 2:
            out.append(line[line.index("█") + 1:line.rindex("█")].strip())
    return out


def dialog_text(app) -> str:
    """The dialog's text with wrapped lines joined."""
    return " ".join(dialog_lines(app))


def approvals(path: Path, name: str = "web-02") -> list:
    return yaml.safe_load(path.read_text("utf-8"))["targets"][name].get("approvals", [])


async def test_dialog_fits_80x24_with_command_checkpoint_irreversibility_and_confirmation(tmp_path: Path) -> None:
    """Demo-sized argv at 80x24: every argument, the checkpoint, IRREVERSIBLE, invariants and the name field at once."""
    demo = Path(__file__).resolve().parents[2] / "ledgers" / "demo" / "ledger.yaml"
    text = demo.read_text("utf-8").replace('db-18: {state: replicating, checkpoint: "0/9A3F2C10",',
                                           'db-18: {state: awaiting_approval, awaiting: cutover, awaiting_by: "agent:x", '
                                           'checkpoint: "0/9A3F2C10",')
    path = tmp_path / "ledger.yaml"
    path.write_text(text, encoding="utf-8")
    app = build(path)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(pilot, "db-18")
        screen = screen_text(app)
        width = dialog.query_one("#argv").content_size.width
        for arg in dialog.pending.argv:
            assert all(piece in screen for _, piece in argv_lines([arg], width)), arg
        for words in ("IRREVERSIBLE", "checkpoint 0/9A3F2C10", "invariants ", "Type the target name (db-18)",
                      "comment (optional", "Approve", "esc Cancel"):
            assert words in screen, words
        assert dialog.query_one("#argv-box").max_scroll_y == 0  # nothing scrolled out of sight


def test_a_long_argument_wraps_with_a_continuation_mark() -> None:
    """`--target=<long name>` wraps; the continuation starts with `↪`, never with what looks like a flag."""
    lines = argv_lines(["cutover", f"--target={LONG_NAME}", "-x"], 40)
    assert lines[0] == ("  ", "cutover") and lines[1][0] == "  " and lines[1][1].startswith("--target=")
    continued = [piece for prefix, piece in lines if prefix == CONTINUED]
    assert continued and "".join(p for _, p in lines[1:-1]) == f"--target={LONG_NAME}"
    assert lines[-1] == ("  ", "-x")
    assert argv_lines(["a b", ""], 40) == [("  ", "'a b'"), ("  ", "''")]  # spaces and empty arguments show


async def test_dialog_shows_continuation_marks_on_screen(ledger_path: Path) -> None:
    """A long argument in the dialog continues on the next line behind `↪`."""
    text = LEDGER.replace('run: ["cutover", "--target", "{target}", "--checkpoint", "{checkpoint}"]',
                          f'run: ["cutover", "--target={LONG_NAME}-{{target}}", "--checkpoint", "{{checkpoint}}"]')
    ledger_path.write_text(text, encoding="utf-8")
    app = build(ledger_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(pilot)
        lines = dialog_lines(app)
        start = next(i for i, line in enumerate(lines) if line.startswith("--target=prod-eu"))
        assert lines[start + 1].startswith(CONTINUED.strip())


async def test_wrong_name_and_enter_shows_the_error_and_keeps_the_focus(ledger_path: Path) -> None:
    """Enter with a wrong name: the error shows at once, the focus stays on the name, nothing lands in the comment."""
    app = build(ledger_path)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(pilot)
        await pilot.press(*"web-2", "enter")
        await pilot.pause()
        assert "✗ Type the target name exactly to approve (you typed 'web-2')" in dialog_text(app)
        assert app.focused is dialog.query_one("#confirm", Input)
        await pilot.press("ctrl+u", *"web-02", "enter", *"lag ok", "enter")
        await settle(pilot)
    [approval] = approvals(ledger_path)
    assert approval["comment"] == "lag ok"


async def test_dialog_follows_the_ledger_and_holds_approve_after_a_change(ledger_path: Path) -> None:
    """Rejected from the CLI while open: the dialog says so and Approve stays disabled, even with the name typed."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        open_ledger(str(ledger_path), actor="carol").reject("web-02", "lag too high")
        app.reload()
        await settle(pilot)
        assert "web-02 changed while this was open: it is now ⊘ blocked (rejected by carol: lag too high)" in dialog_text(app)
        assert ("^r", "Look again") not in dialog.query_one(KeyBar).items()  # there is nothing left to look at
        await pilot.press(*"web-02")
        await pilot.pause()
        assert dialog.query_one("#approve", Button).disabled
        await pilot.press("enter", "enter")
        await settle(pilot)
    assert approvals(ledger_path) == []


async def test_look_again_after_a_new_checkpoint(ledger_path: Path) -> None:
    """The checkpoint moves while the dialog is open: it says so; ctrl+r shows the new one and approving binds to it."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        ledger_path.write_text(ledger_path.read_text("utf-8").replace("0/9A3F2C10", "0/9A41D7F8"), encoding="utf-8")
        app.reload()
        await settle(pilot)
        assert "what would run changed (checkpoint now 0/9A41D7F8)" in dialog_text(app)
        assert ("^r", "Look again") in dialog.query_one(KeyBar).items()
        await pilot.press(*"web-02")
        assert dialog.query_one("#approve", Button).disabled
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "checkpoint 0/9A41D7F8" in screen_text(app) and not dialog.query_one("#approve", Button).disabled
        await pilot.press("enter", "enter")
        await settle(pilot)
    [approval] = approvals(ledger_path)
    assert approval["checkpoint"] == "0/9A41D7F8"


async def test_approval_carries_the_hash_it_showed(ledger_path: Path) -> None:
    """The checkpoint changes after the dialog's last look: the engine refuses the approval; nothing is written."""
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_dialog(pilot)
        await pilot.press(*"web-02", "enter")
        ledger_path.write_text(ledger_path.read_text("utf-8").replace("0/9A3F2C10", "0/DEADBEEF"), encoding="utf-8")
        before = ledger_path.read_bytes()
        await pilot.press("enter")  # approve what was shown, before any re-read
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "Changed since you looked" in screen_text(app)
    assert ledger_path.read_bytes() == before
    assert not any(r["kind"] == "approval" for r in journal_records(ledger_path))


async def test_every_dialog_shows_its_own_keys_in_the_footer(ledger_path: Path) -> None:
    """Approval, all invariants, reason and note editor: the footer lists the dialog's keys, not the main screen's."""
    app = build(ledger_path)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(pilot)
        assert screen_text(app).splitlines()[-1].split() == ["esc", "Cancel", "^o", "All", "invariants"]
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, InvariantsScreen) and "never touch more than 2 dbs" in screen_text(app)
        assert screen_text(app).splitlines()[-1].split() == ["esc", "Back"]
        await pilot.press("escape", "escape")
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ReasonPrompt) and screen_text(app).splitlines()[-1].split() == ["esc", "Cancel"]
        await pilot.press("escape", "e")
        await pilot.pause()
        assert isinstance(app.screen, NoteEditor)
        assert screen_text(app).splitlines()[-1].split()[:3] == ["^s", "Save", "note"]
        assert dialog is not app.screen


async def test_detail_shows_the_pending_command_keeps_the_header_and_approves(ledger_path: Path) -> None:
    """Enter on web-02: the header stays, "Would run next" shows the exact argv, and `a` opens the approval."""
    app = build(ledger_path)
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-06")
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
        assert isinstance(app.screen, DetailScreen) and "OPERATOR: alice" in text
        assert "link  IRREVERSIBLE" in text and "rotate" in text and "--link" in text
        await pilot.press("escape")
        app.main.table.move_to("web-02")
        await pilot.press("enter")
        await settle(pilot)
        assert "cutover  IRREVERSIBLE  awaits your approval (a)" in screen_text(app)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        await pilot.press(*"web-02", "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "web-02   ◇ checked" not in screen_text(app) and "approved by alice" in screen_text(app)
    assert approvals(ledger_path)[0]["by"] == "alice"


async def test_read_only_detail_offers_no_approve(ledger_path: Path) -> None:
    """Read-only: the detail's footer has no Approve, and `a` says why it does nothing."""
    app = build(ledger_path, read_only=True)
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-02")
        await pilot.press("enter")
        await settle(pilot)
        assert "READ-ONLY" in screen_text(app)
        assert ("a", "Approve") not in app.screen.query_one(KeyBar).items()
        await pilot.press("a")
        await pilot.pause()
        assert any(n.message.startswith("read-only: approve") for n in app._notifications)
