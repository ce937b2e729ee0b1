"""With NO_COLOR the production chip is readable, and marked without colour (reverse video).

Measured on the style the header really renders for the chip, after Textual's own
monochrome filter (what NO_COLOR does to every colour), in every theme.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import fixed_clock, settle
from tests.tui.test_contrast import THEMES, contrast_of
from tui.app import make_app
from tui.widgets.header import HeaderBar


@pytest.mark.parametrize("theme", THEMES)
async def test_the_production_chip_reads_without_colour(ledger_path: Path, theme: str, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False, theme=theme)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.no_color
        header = app.main.query_one(HeaderBar)
        line = header.lines(80)[0]
        start = line.plain.index(" environment: production ")
        [span] = [s for s in line.spans if s.start <= start + 1 < s.end]
        style = header.rich_style + (span.style if not isinstance(span.style, str) else app.console.get_style(span.style))
        assert style.reverse, "without colour the chip must still stand out (reverse video)"
        assert contrast_of(style, "no_color") >= 4.5, f"{theme}: {contrast_of(style, 'no_color'):.1f}:1"
