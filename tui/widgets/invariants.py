"""The invariants panel: each invariant with ok / violated / unknown / unenforced and its value.

Readings come from the engine (`LedgerHandle.invariants`), which reads the last
metric values sessions recorded in the journal; the TUI runs no ledger command.
Status is symbol + word + colour.
"""

from __future__ import annotations

from typing import Any, Sequence

from rich.text import Text
from textual.widget import Widget

from tui.text import clean_line

SYMBOLS = {"ok": "✓", "violated": "✗", "unknown": "?", "unenforced": "⚠"}


class InvariantsPanel(Widget):
    """One line per invariant (wrapping when narrow)."""

    COMPONENT_CLASSES = {
        "invariants--ok",
        "invariants--violated",
        "invariants--unknown",
        "invariants--unenforced",
    }

    DEFAULT_CSS = """
    InvariantsPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._items: list[Any] = []
        self._declared: list[str] = []

    def show(self, items: Sequence[Any], declared: Sequence[Any] = ()) -> None:
        """Show engine `InvariantStatus` items; `declared` is shown as unknown when the engine gave none."""
        self._items = list(items)
        self._declared = [d if isinstance(d, str) else str(d) for d in declared]
        self.refresh(layout=True)

    def render(self) -> Text:
        text = Text(end="")
        if not self._items and not self._declared:
            return Text("no invariants declared", style="dim", end="")
        rows: list[tuple[str, str, str, float | None]] = [
            (getattr(i, "status", "unknown"), getattr(i, "text", ""), getattr(i, "value", "") or "", getattr(i, "age", None))
            for i in self._items
        ] or [("unknown", d, "", None) for d in self._declared]
        for n, (status, sentence, value, age) in enumerate(rows):
            if n:
                text.append("\n")
            style = self.get_component_rich_style(f"invariants--{status}", default=None) if status in SYMBOLS else None
            text.append(f"{SYMBOLS.get(status, '?')} {status} ", style=style or "")
            text.append(clean_line(sentence))
            if value:
                # The engine's value already carries a reading's age ("0.02% (3s ago)").
                text.append(f"  {clean_line(value)}", style="bold")
        return text
