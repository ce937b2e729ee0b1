"""Help (`?`): every key that works right now, with what it does.

The list is built by the main screen from its bindings after `check_action`, so
read-only mode shows no mutating action here either.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class HelpScreen(ModalScreen[None]):
    """Keys and what they do.

    | Key | Action | What it does |
    |---|---|---|
    | escape / ? / q | close | Close help |
    """

    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close", id="help.close"),
    ]

    def __init__(self, keys: list[tuple[str, str]], mode_line: str) -> None:
        super().__init__(classes="modal-screen")
        self.keys = keys
        self.mode_line = mode_line

    def compose(self) -> ComposeResult:
        body = Text(end="")
        width = max((len(k) for k, _ in self.keys), default=4) + 2
        for key, description in self.keys:
            body.append(f"{key:>{width}}  ", style="bold")
            body.append(description + "\n")
        body.append("\nctrl+p opens the command palette: every action above, by name.", style="dim")
        with Vertical(id="dialog", classes="dialog help"):
            yield Label("handoff-tui: keys", classes="dialog-title")
            yield Label(self.mode_line, id="help-mode")
            with VerticalScroll():
                yield Static(body, id="help-keys")

    def action_close(self) -> None:
        self.dismiss(None)
