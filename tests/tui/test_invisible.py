"""The TUI's approval dialog shows every invisible character of the command it asks
about as a visible escape (the engine's one function, through engine.api)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen

HIDDEN = "\U000e0041\u00ad\u034f\u3164\ufe0f\U000e0100\u200b"


async def test_the_approval_dialog_spells_out_hidden_characters(tmp_path: Path) -> None:
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER.replace('run: ["cutover", "--target", "{target}"', f'run: ["cutover", "--target", "x{HIDDEN}y"'),
                    encoding="utf-8")
    before = path.read_bytes()
    app = make_app(str(path), clock=fixed_clock, watch=False, actor="alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        assert app.screen.pending.argv[2] == f"x{HIDDEN}y"  # what runs is unchanged: only what is shown is spelled out
        screen = screen_text(app)
    assert not any(c in screen for c in HIDDEN)
    # One argument, one shell word: each hidden character as its escape (engine.api.shell_word).
    assert "$'x\\U000e0041\\xad\\u034f\\u3164\\ufe0f\\U000e0100\\u200by'" in screen.replace("\n", "")
    assert path.read_bytes() == before
