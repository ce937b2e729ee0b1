"""The row under the cursor, in full, under the table when the screen is narrow (80x24).

At 80 columns the table cuts "next action" to a few words and has no room for the
reason; this line gives the target's name, its state and what happens next (as
`tui.attention` words it) in full, then why a blocked or failed target stopped,
wrapped to at most three lines. All text is cleaned: ledger text is data.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from tui.attention import drift, next_shown
from tui.states import label
from tui.text import clean_line


class CursorLine(Static):
    """What the selected target waits on, never cut."""

    DEFAULT_CSS = """
    CursorLine { height: auto; max-height: 3; padding: 0 1; }
    """

    def show(self, name: str | None, target: Any) -> None:
        """Repaint for `name` (None, or a target the file lost: an empty line)."""
        if name is None or target is None:
            self.update("")
            return
        text = Text(end="")
        text.append(f"▶ {clean_line(name)}", style="bold")
        text.append(f"  {label(target.state)}")
        if drift(target):
            text.append("  ≠ DRIFT", style="bold reverse")
        shown = next_shown(name, target)
        if shown:
            text.append("  next: ", style="bold")
            text.append(clean_line(shown))
        if target.state in ("blocked", "failed") and getattr(target, "reason", None) and not drift(target):
            # After the next action, which is never cut: the reason column is not on an 80-column
            # screen, and a long reason (an engine's, 250 characters) may run past the three lines.
            text.append("  why: ", style="bold")
            text.append(clean_line(target.reason))
        self.update(text)
