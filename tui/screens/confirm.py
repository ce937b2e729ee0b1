"""A yes/no question (unpause, discard edits, end the demo): `ModalScreen[bool]`.

The caller's callback gets True only when the operator chose yes; Escape and the
no button give False. The focus starts on the safe answer, so Enter alone never
says yes to something dangerous.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tui.text import one_line, safe
from tui.widgets.keybar import KeyBar


class ConfirmScreen(ModalScreen[bool]):
    """Title, explanation, yes and no.

    | Key | Action | What it does |
    |---|---|---|
    | escape | cancel | Answer no |
    | y | yes | Answer yes |
    """

    BINDINGS = [
        Binding("escape", "cancel", "No", id="confirm.cancel"),
        Binding("y", "yes", "Yes", id="confirm.yes"),
    ]

    def __init__(self, title: str, explanation: str = "", *, yes: str = "Yes", no: str = "No",
                 danger: bool = False, default_yes: bool = False) -> None:
        super().__init__(classes="modal-screen")
        self.question = title
        self.explanation = explanation
        self.yes_label, self.no_label = yes, no
        self.danger = danger
        self.default_yes = default_yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog confirm" + (" -danger" if self.danger else "")):
            yield Label(one_line(self.question, style="bold"), id="confirm-title", classes="dialog-title")
            if self.explanation:
                yield Static(safe(self.explanation), id="confirm-explanation")
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes_label} (y)", id="yes", variant="error" if self.danger else "primary")
                yield Button(f"{self.no_label} (esc)", id="no")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#yes" if self.default_yes else "#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
