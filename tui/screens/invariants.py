"""Every invariant with its status and value (ctrl+o in the approval dialog)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label

from tui.widgets.invariants import InvariantsPanel
from tui.widgets.keybar import KeyBar


class InvariantsScreen(ModalScreen[None]):
    """The invariants panel in a dialog of its own.

    | Key | Action | What it does |
    |---|---|---|
    | escape,ctrl+o,q | close | Back |
    """

    BINDINGS = [Binding("escape,ctrl+o,q", "close", "Back", id="invariants.close", key_display="esc")]

    def __init__(self, items: Sequence[Any], declared: int = 0) -> None:
        super().__init__(classes="modal-screen")
        self.items = list(items)
        self.declared = declared

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label("Invariants now", classes="dialog-title")
            with VerticalScroll(id="invariants-scroll"):
                panel = InvariantsPanel(id="invariants-all")
                panel.show(self.items, [f"(declared #{n + 1})" for n in range(self.declared)] if not self.items else ())
                yield panel
        yield KeyBar()

    def action_close(self) -> None:
        self.dismiss(None)
