"""Runbook state names are ledger text: shown as data in every place of the TUI, never
parsed as markup (no `[@click=...]` action) and never passed to the terminal with escapes."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Select

from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.detail import DetailScreen
from tui.screens.reason import ReasonPrompt

ACTION = "[@click=app.quit]quit[/]"
ESCAPE = "held\\e]0;pwned\\e\\\\"  # as YAML writes it: held ESC ] 0 ; pwned ESC \


def _ledger(tmp_path: Path, states: list[str], web05: str | None = None) -> Path:
    quoted = ", ".join(f'"{s}"' for s in states)
    text = LEDGER.replace("  steps:\n", f"  states: [{quoted}]\n  steps:\n")
    if web05 is not None:
        text = text.replace("web-05: {state: queued}", f'web-05: {{state: "{web05}"}}')
    path = tmp_path / "ledger.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_unblock_choices_are_not_markup_and_run_no_action(tmp_path: Path) -> None:
    """u on a blocked target lists the ledger's states; a state named `[@click=app.quit]quit[/]`
    is shown with its brackets, and clicking it does not quit the app."""
    path = _ledger(tmp_path, [ACTION])
    app = make_app(str(path), clock=fixed_clock, watch=False, actor="alice")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-04")
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt)
        select = app.screen.query_one(Select)
        select.focus()
        await pilot.pause()
        select.expanded = True
        await settle(pilot)
        lines = screen_text(app).splitlines()
        shown = [line for line in lines if "quit" in line]
        y = next(i for i, line in enumerate(lines) if "quit" in line and "queued" not in line)
        x = lines[y].index("quit") + 1
        await pilot.click(offset=(x, y))
        await pilot.pause()
        await pilot.pause()
        assert app.is_running, "clicking a state name in the unblock dialog ran `app.quit`"
        assert any(ACTION in line for line in shown), f"the state name was parsed as markup: {shown!r}"


async def test_a_state_name_reaches_no_widget_with_a_raw_escape(tmp_path: Path) -> None:
    """The table row, the cursor line and the detail all show ESC as ␛, as they do for a target name."""
    path = _ledger(tmp_path, [ESCAPE], web05=ESCAPE)
    app = make_app(str(path), clock=fixed_clock, watch=False, actor="alice")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-05")
        await settle(pilot)
        main = screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        detail = screen_text(app)
    assert "held␛]0;pwned␛\\" in main  # the summary line already gets it right
    assert "\x1b" not in main, [line for line in main.splitlines() if "\x1b" in line]
    assert "\x1b" not in detail, [line for line in detail.splitlines() if "\x1b" in line]
