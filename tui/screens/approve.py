"""The approval modal: exactly what will run, whether it can be undone, and a deliberate yes.

Shows the rendered argv (joined as a shell would quote it, so it can be pasted
and read unambiguously), IRREVERSIBLE when it is, the checkpoint the approval
is bound to, last verification, evidence of the last step and the current
invariants. An irreversible step needs the target's name typed exactly: muscle
memory must not be able to approve. Returns `ApproveResult` or None.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tui.text import clean, clean_line, safe
from tui.timefmt import short_time
from tui.widgets.invariants import SYMBOLS


@dataclass
class ApproveResult:
    """The operator's yes: which step, and an optional comment."""

    step: str
    comment: str | None


COMPACT_BELOW = 34  # terminal rows under which the modal drops margins and uses one-line inputs
BODY_MAX = 14       # rows of command, facts and invariants shown before the body scrolls


def command_text(argv: Sequence[str]) -> str:
    """The argv as one unambiguous line (quoted per argument, never run)."""
    return shlex.join([str(a) for a in argv])


class ApproveScreen(ModalScreen[ApproveResult | None]):
    """Approve one awaiting step on one target.

    | Key | Action | What it does |
    |---|---|---|
    | escape | cancel | Close without approving |
    | enter | submit | In the comment field: approve (when confirmed) |
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="approve.cancel"),
    ]

    def __init__(self, name: str, target: Any, pending: Any, invariants: Sequence[Any] = ()) -> None:
        super().__init__(classes="modal-screen")
        self.target_name = name
        self.target = target
        self.pending = pending
        self.invariants = list(invariants)

    @property
    def irreversible(self) -> bool:
        return bool(getattr(self.pending, "irreversible", True))

    def compose(self) -> ComposeResult:
        step = self.pending.step
        with Vertical(id="dialog", classes="dialog approve" + (" -danger" if self.irreversible else "")):
            title = Text("Approve ", style="bold", end="")
            title.append(clean_line(step.name), style="bold")
            title.append(" on ")
            title.append(clean_line(self.target_name), style="bold")
            yield Label(title, id="approve-title")
            if self.irreversible:
                yield Label(" ⚠ IRREVERSIBLE: this step cannot be undone ", id="irreversible", classes="-danger-badge")
            else:
                yield Label("reversible step", id="reversible")
            with VerticalScroll(id="approve-body"):
                yield Label("Command (exactly as it will run):", classes="field-label")
                yield Static(safe(command_text(self.pending.argv)), id="argv", classes="command")
                if step.description:
                    yield Static(safe(step.description), id="step-description")
                yield Static(self._facts(), id="facts")
                yield Static(self._invariants(), id="approve-invariants")
            if self.irreversible:
                yield Label(Text.assemble("Type the target name (", (clean_line(self.target_name), "bold"), ") to confirm:"))
                yield Input(placeholder=clean_line(self.target_name), id="confirm")
            yield Input(placeholder="comment (optional, goes to the journal)", id="comment")
            with Horizontal(classes="buttons"):
                yield Button("Approve", id="approve", variant="error" if self.irreversible else "success", disabled=self.irreversible)
                yield Button("Cancel", id="cancel")

    def _facts(self) -> Text:
        t = self.target
        lines = Text(end="")

        def row(label: str, value: Any) -> None:
            if value in (None, ""):
                return
            if lines.plain:
                lines.append("\n")
            lines.append(f"{label:<14}", style="bold")
            lines.append(clean(value))

        row("checkpoint", self.pending.checkpoint or getattr(t, "checkpoint", None) or "(none)")
        row("state", getattr(t, "state", ""))
        row("verified at", short_time(getattr(t, "verified_at", None)) if getattr(t, "verified_at", None) else "never")
        row("awaiting by", getattr(t, "awaiting_by", None))
        row("since", short_time(getattr(t, "awaiting_since", None)) if getattr(t, "awaiting_since", None) else None)
        ev = getattr(t, "evidence", None)
        if ev is not None:
            bits = [f"step {ev.step}" if ev.step else "", f"exit {ev.exit_code}" if ev.exit_code is not None else "",
                    f"{ev.duration:.1f}s" if ev.duration is not None else "", short_time(ev.at) if ev.at else ""]
            row("evidence", ", ".join(b for b in bits if b))
        row("hash", str(self.pending.hash)[:16])
        return lines

    def _invariants(self) -> Text:
        text = Text("Invariants now:", style="bold", end="")
        if not self.invariants:
            text.append(" none declared", style="dim")
        for inv in self.invariants:
            status = getattr(inv, "status", "unknown")
            text.append(f"\n {SYMBOLS.get(status, '?')} {status:<10} ")
            text.append(clean_line(getattr(inv, "text", "")))
            value = getattr(inv, "value", "")
            if value:
                text.append(f"  {clean_line(value)}", style="bold")
        return text

    def on_mount(self) -> None:
        self._fit(self.app.size.height)
        self.query_one("#confirm" if self.irreversible else "#comment", Input).focus()

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """Keep the confirm box, the comment and the buttons on screen at 80x24.

        The body (command, facts, invariants) scrolls; below COMPACT_BELOW rows the
        inputs and buttons take one line each and the gaps go.
        """
        compact = height < COMPACT_BELOW
        for widget in self.query(Input):
            widget.compact = compact
            widget.styles.margin = (0, 0, 0, 0) if compact else (1, 0, 0, 0)
        for button in self.query(Button):
            button.compact = compact
        self.query_one(".buttons").styles.margin = (0, 0, 0, 0) if compact else (1, 0, 0, 0)
        self.query_one("#approve-title").styles.margin = (0, 0, 0, 0) if compact else (0, 0, 1, 0)
        # Rows the dialog needs besides the body: borders, title, badge, label, inputs, buttons.
        fixed = (2 + 1 + 1 + 1 + 1 + 1 + 1) if compact else (2 + 2 + 1 + 1 + 4 + 4 + 4)
        room = int(height * 0.95) - fixed
        self.query_one("#approve-body").styles.max_height = max(3, min(BODY_MAX, room))

    def _confirmed(self) -> bool:
        if not self.irreversible:
            return True
        return self.query_one("#confirm", Input).value == self.target_name

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "confirm":
            self.query_one("#approve", Button).disabled = not self._confirmed()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "confirm":
            self.query_one("#comment", Input).focus()
        else:
            self._submit()

    def _submit(self) -> None:
        if not self._confirmed():
            self.notify("Type the target name exactly to approve an irreversible step.", severity="warning", markup=False)
            self.query_one("#confirm", Input).focus()
            return
        comment = self.query_one("#comment", Input).value.strip() or None
        self.dismiss(ApproveResult(self.pending.step.name, comment))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "approve":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
