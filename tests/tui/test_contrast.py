"""The selected row is legible in every theme and colour mode, and marked without colour too.

The contrast is computed from the styles the table really renders for the cursor
row, after what the terminal would do to them: truecolor as is, 256 and 16
colours downgraded as Rich downgrades them (16 colours measured in the VGA, xterm
and Windows palettes), NO_COLOR through Textual's own monochrome filter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich._palettes import STANDARD_PALETTE, WINDOWS_PALETTE
from rich.color import Color, ColorSystem
from rich.style import Style
from textual.filter import monochrome_style

import themes
from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app

XTERM = [(0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
         (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255), (255, 255, 255)]
MODES = ("truecolor", "256", "16", "no_color")
THEMES = (*themes.THEME_NAMES, "textual-dark", "textual-light")


def rgb_variants(colour: Color, mode: str) -> list[tuple[int, int, int]]:
    """What a terminal may show for `colour` in `mode` (several palettes for 16 colours)."""
    if mode == "256":
        return [tuple(colour.downgrade(ColorSystem.EIGHT_BIT).get_truecolor())]
    if mode == "16":
        number = colour.downgrade(ColorSystem.STANDARD).number
        return [tuple(STANDARD_PALETTE[number]), XTERM[number], tuple(WINDOWS_PALETTE[number])]
    return [tuple(colour.get_truecolor())]


def contrast_of(style: Style, mode: str) -> float:
    """The worst contrast of `style`'s text on its background in `mode`."""
    if mode == "no_color":
        style = monochrome_style(style)
    fg, bg = style.color, style.bgcolor
    assert fg is not None and bg is not None, f"the cursor row must set both colours: {style}"
    if style.reverse:
        fg, bg = bg, fg
    worst = 21.0
    for f, b in zip(rgb_variants(fg, mode), rgb_variants(bg, mode)):
        worst = min(worst, themes.contrast("#%02x%02x%02x" % f, "#%02x%02x%02x" % b))
    return worst


@pytest.mark.parametrize("theme", THEMES)
async def test_selected_row_contrast_is_at_least_4_5_in_every_mode(ledger_path: Path, theme: str) -> None:
    """Every cell of the cursor row, in every colour mode, reaches 4.5:1; the row starts with `▶`."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False, theme=theme)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.main.table
        for name in ("web-02", "web-03", "web-01", "web-05"):  # awaiting, failed, done, queued: every tone
            table.move_to(name)
            await pilot.pause()
            strip = table.render_line(table.cursor - int(table.scroll_y) + 1)
            assert strip.text.startswith("▶"), strip.text
            assert name in strip.text
            cells = [s for s in strip if s.text.strip()]
            assert cells
            for mode in MODES:
                worst = min(contrast_of(s.style, mode) for s in cells)
                assert worst >= themes.MIN_CURSOR_CONTRAST, (theme, name, mode, round(worst, 2))
                assert not any(s.style.dim for s in cells), "dim text on the cursor row"


def test_every_theme_sets_a_cursor_pair_that_passes_on_its_own() -> None:
    """Our themes' cursor colours reach 4.5:1; any other theme gets black or white text on its primary."""
    for theme in themes.THEMES:
        assert themes.contrast(theme.variables["cursor-foreground"], theme.variables["cursor-background"]) >= 4.5
    for background in ("#0178d4", "#ffb86c", "#777777", "#004578"):
        assert themes.contrast(themes.best_text_on(background), background) >= 4.5
