"""docs/operating.md lists every key of the main screen, from the one table of keys."""

from __future__ import annotations

from pathlib import Path

from tui.screens.main import MainScreen

OPERATING = (Path(__file__).resolve().parents[2] / "docs" / "operating.md").read_text(encoding="utf-8")


def test_operating_lists_every_key_of_the_main_screen():
    shown = {"slash": "/", "question_mark": "?", "escape": "esc"}
    keys = {shown.get(b.key, b.key_display or b.key) for b in MainScreen.BINDINGS}
    missing = sorted(k for k in keys if f"| `{k}` |" not in OPERATING)
    assert len(keys) > 15 and missing == []
