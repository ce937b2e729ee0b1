"""The one error view: any engine error (title + message) or an unexpected failure.

Every worker error reaches `HandoffApp.show_error`, which pushes this screen,
so no failure vanishes silently. The message is data (it can quote ledger
text) and is shown as plain text.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tui.text import one_line, safe
from tui.widgets.keybar import KeyBar


class ErrorScreen(ModalScreen[None]):
    """Title, message, and a way back.

    | Key | Action | What it does |
    |---|---|---|
    | escape | dismiss_error | Close the error (or Enter on OK) |
    """

    BINDINGS = [
        Binding("escape", "dismiss_error", "Close", id="error.close"),
    ]

    def __init__(self, title: str, message: str) -> None:
        super().__init__(classes="modal-screen")
        self.error_title = title
        self.error_message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog -error"):
            yield Label(one_line(self.error_title, style="bold"), id="error-title")
            yield Static(safe(self.error_message), id="error-message")
            yield Button("OK", id="ok", variant="error")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#ok", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_dismiss_error(self) -> None:
        self.dismiss(None)
