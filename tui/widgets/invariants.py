"""The invariants panel: each invariant with ok / violated / unknown / unenforced and its value.

Readings come from the engine (`LedgerHandle.invariants`), which reads the last
metric values sessions recorded in the journal; the TUI runs no ledger command.
Status is symbol + word + colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widget import Widget

from tui.text import clean_line

SYMBOLS = {"ok": "✓", "violated": "✗", "unknown": "?", "unenforced": "⚠"}
WORST_FIRST = ("violated", "unenforced", "unknown", "ok")


def status_label(item: Any) -> str:
    """`ok`, `violated`, `unknown (stale)`: the engine's words for an invariant's status."""
    label = getattr(item, "label", None)
    return label if isinstance(label, str) else getattr(item, "status", "unknown")


def summary(items: Sequence[Any], declared: int = 0) -> tuple[str, ...] | None:
    """One line for the header and the approval dialog, worst first: (long, short, worst status, medium).

    `✗ invariant violated: touched 1309/2 (+1 more)` / `✗ 2 violated`; `✓ 3 invariants ok`."""
    if not items:
        return ("? invariants not evaluated yet", "? invariants", "unknown", "? not evaluated yet") if declared else None
    ranked = sorted(items, key=lambda i: WORST_FIRST.index(getattr(i, "status", "unknown")) if getattr(i, "status", "") in WORST_FIRST else 2)
    worst = ranked[0]
    status = getattr(worst, "status", "unknown")
    same = [i for i in items if getattr(i, "status", "") == status]
    if status == "ok":
        many = f"✓ {len(items)} invariant{'s' if len(items) != 1 else ''} ok"
        return many, "✓ invariants ok", "ok", many
    value = clean_line(getattr(worst, "value", "") or getattr(worst, "text", ""))
    more = f" (+{len(same) - 1} more)" if len(same) > 1 else ""
    label = status_label(worst)
    long = f"{SYMBOLS[status]} invariant {label}: {value}{more}"
    return long, f"{SYMBOLS[status]} {len(same)} {label}", status, f"{SYMBOLS[status]} {label}: {value}{more}"


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
        rows: list[tuple[str, str, str, str]] = [
            (getattr(i, "status", "unknown"), status_label(i), getattr(i, "text", ""), getattr(i, "value", "") or "")
            for i in self._items
        ] or [("unknown", "unknown", d, "") for d in self._declared]
        for n, (status, label, sentence, value) in enumerate(rows):
            if n:
                text.append("\n")
            style = self.get_component_rich_style(f"invariants--{status}", default=None) if status in SYMBOLS else None
            text.append(f"{SYMBOLS.get(status, '?')} {label} ", style=style or "")
            text.append(clean_line(sentence))
            if value:
                # The engine's value already carries a reading's age ("0.02% (3s ago)").
                text.append(f"  {clean_line(value)}", style="bold")
        return text
