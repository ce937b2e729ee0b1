"""A prompt for a reason (pause, reject, block, unblock, forced retry), with an optional choice.

Returns `Reason(text, choice)` on confirm, None on cancel. An empty reason is
refused here, since every one of these ends up in the journal as the why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from tui.text import one_line, safe
from tui.widgets.keybar import KeyBar


@dataclass
class Reason:
    """What the operator typed (and chose)."""

    text: str
    choice: str | None = None


class ReasonPrompt(ModalScreen[Reason | None]):
    """Title, explanation, a reason field and OK / Cancel.

    | Key | Action | What it does |
    |---|---|---|
    | escape | cancel | Close without doing anything |

    Enter in the reason field confirms (the Input's own submit, not a binding).
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="reason.cancel"),
    ]

    def __init__(
        self,
        title: str,
        explanation: str = "",
        *,
        ok_label: str = "OK",
        danger: bool = False,
        choices: Sequence[str] = (),
        choice_label: str = "",
        placeholder: str = "why (goes to the journal)",
        value: str = "",
    ) -> None:
        super().__init__(classes="modal-screen")
        self.prompt_title = title
        self.explanation = explanation
        self.ok_label = ok_label
        self.danger = danger
        self.choices = list(choices)
        self.choice_label = choice_label
        self.placeholder = placeholder
        self.value = value  # a reason a refused request left (tui.mutations.take_draft)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog" + (" -danger" if self.danger else "")):
            yield Label(one_line(self.prompt_title, style="bold"), id="reason-title")
            if self.explanation:
                yield Static(safe(self.explanation), id="reason-explanation")
            if self.choices:
                yield Label(self.choice_label or "Choose")
                # Choices are ledger text (a runbook's states): shown as data, never read as markup.
                yield Select([(one_line(c), c) for c in self.choices], value=self.choices[0], allow_blank=False, id="choice")
            yield Input(self.value, placeholder=self.placeholder, id="reason")
            yield Label("", id="reason-error", classes="error-text")
            with Horizontal(classes="buttons"):
                yield Button(self.ok_label, id="ok", variant="error" if self.danger else "primary")
                yield Button("Cancel", id="cancel")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    def _submit(self) -> None:
        text = self.query_one("#reason", Input).value.strip()
        if not text:
            self.query_one("#reason-error", Label).update("A reason is required.")
            return
        choice = None
        if self.choices:
            value = self.query_one("#choice", Select).value
            choice = value if isinstance(value, str) else None
        self.dismiss(Reason(text, choice))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
