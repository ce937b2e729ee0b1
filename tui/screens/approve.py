"""The approval dialog: exactly what will run, whether it can be undone, and a deliberate yes.

At 80x24 the argv (one argument per line, long ones wrapped with `↪`), the
checkpoint the approval is bound to, IRREVERSIBLE, a one-line invariant summary
(ctrl+o lists them all) and the confirmation field are on screen together. An
irreversible step needs the target's name typed exactly; Enter with a wrong name
says so at once and keeps the focus on the name.

The dialog follows the live ledger (`follow`): when the target's state, command
or checkpoint changes under it, it says what changed and disables Approve until
the operator looks again (ctrl+r). The approval carries the hash of what was
shown and the checkpoint drift shown (none, or that one), and the engine refuses it
if either is no longer so: a drift recorded before the file watcher's next reading is
never approved unseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from engine.api import DRIFT_HEADING, HandoffError, drift_line
from tui.attention import drift
from tui.policy import policy_lines
from tui.screens.invariants import InvariantsScreen
from tui.states import label
from tui.text import clean_line, one_line, safe
from tui.timefmt import short_time
from tui.widgets.argv_view import ArgvView
from tui.widgets.invariants import summary
from tui.widgets.keybar import KeyBar

WRONG_NAME = "Type the target name exactly to approve"
TALL = 30  # rows from which the step's description shows too


def drift_text(drifted: str | None) -> Text:
    """The mismatch, and what approving anyway will and will not do (two lines at most);
    the batch dialog gives each drifted target the same words."""
    if not drifted:
        return Text("")
    text = Text(clean_line(drift_line(drifted)), end="")  # the words Slack shows too
    text.stylize("bold", 0, len(DRIFT_HEADING))
    return text


@dataclass
class ApproveResult:
    """The operator's yes: which step, the hash of the command they saw, an optional comment,
    and the checkpoint drift they were shown (None: none)."""

    step: str
    comment: str | None
    expect_hash: str
    expect_drift: str | None = None


class ApproveScreen(ModalScreen[ApproveResult | None]):
    """Approve one awaiting step on one target.

    | Key | Action | What it does |
    |---|---|---|
    | escape | cancel | Close without approving |
    | ctrl+o | invariants | Show every invariant |
    | ctrl+r | look_again | Show the target as it is now (after a change) |
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="approve.cancel"),
        Binding("ctrl+o", "invariants", "All invariants", id="approve.invariants", key_display="^o"),
        Binding("ctrl+r", "look_again", "Look again", id="approve.look_again", key_display="^r"),
    ]

    def __init__(self, name: str, target: Any, pending: Any, invariants: Sequence[Any] = (), declared: int = 0,
                 environment: str | None = None, policy: str | None = None, comment: str = "") -> None:
        super().__init__(classes="modal-screen")
        self.comment = comment  # the comment a refused approval left (tui.mutations.take_draft)
        self.environment = environment
        self.policy = policy  # the engine's words for what approving takes (None: one approval, no timers)
        self.policy_height = 0  # lines the policy box takes (tui.policy)
        self.target_name = name
        self.target = target
        self.pending = pending
        self.invariants = list(invariants)
        self.declared = declared
        self.changed: str | None = None  # what changed under the dialog, until the operator looks again
        self.now: Any = pending         # what would be approved now (None: nothing)
        self._latest: Any = target      # the target as the last reading had it

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "look_again":
            # Offered once something changed under the dialog, and there is still something to approve.
            return self.changed is not None and self.now is not None
        return True

    @property
    def irreversible(self) -> bool:
        return bool(getattr(self.pending, "irreversible", True))

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog approve" + (" -danger" if self.irreversible else "")):
            yield Label(self._title(), id="approve-title")
            if self.irreversible:
                yield Label(" ⚠ IRREVERSIBLE: this step cannot be undone ", id="irreversible", classes="-danger-badge")
            else:
                yield Label("reversible step", id="reversible")
            yield Label("Command, exactly as it will run (one argument per line):", classes="field-label")
            with VerticalScroll(id="argv-box"):
                yield ArgvView(self.pending.argv, id="argv", classes="command")
            yield Static(safe(self.pending.step.description or ""), id="step-description")
            yield Static(self._facts(), id="facts")
            yield Static(id="approve-policy")
            yield Static(self._drift_text(), id="approve-drift", classes="error-text")
            yield Static(id="approve-invariants")
            yield Static(id="approve-changed", classes="error-text")
            if self.irreversible:
                yield Label(Text.assemble("Type the target name (", (clean_line(self.target_name), "bold"), ") to confirm:"))
                yield Input(placeholder=clean_line(self.target_name), id="confirm", compact=True)
                yield Static("", id="confirm-error", classes="error-text")
            yield Input(self.comment, placeholder="comment (optional, goes to the journal)", id="comment", compact=True)
            with Horizontal(classes="buttons"):
                yield Button("Approve anyway" if self.drifted else "Approve", id="approve", variant="error" if self.irreversible else "success",
                             disabled=self.irreversible, compact=True)
                yield Button("Cancel", id="cancel", compact=True)
        yield KeyBar()

    def _title(self) -> Text:
        title = Text("Approve ", style="bold", end="")
        title.append(clean_line(self.pending.step.name), style="bold")
        title.append(" on ")
        title.append(clean_line(self.target_name), style="bold")
        if self.environment:
            # Named here as in the pause dialog: the header is behind the dialog.
            title.append(f"  environment: {clean_line(self.environment)}", style="bold reverse")
        return title

    @property
    def drifted(self) -> str | None:
        """The target's recorded checkpoint mismatch, or None."""
        return drift(self.target)

    def _drift_text(self) -> Text:
        return drift_text(self.drifted)

    def _facts(self) -> Text:
        """Two lines that never wrap (the dialog's height must not depend on them)."""
        t = self.target
        first = Text(end="", no_wrap=True, overflow="ellipsis")
        first.append("checkpoint ", style="bold")
        first.append(clean_line(self.pending.checkpoint or getattr(t, "checkpoint", None) or "(none)"))
        verified = getattr(t, "verified_at", None)
        first.append("  verified ", style="bold")
        first.append(short_time(verified) if verified else "never")
        if self.drifted:
            first.append(" (before the drift)", style="bold")
        first.append("  asked by ", style="bold")
        first.append(clean_line(getattr(t, "awaiting_by", None) or "?"))
        second = Text(end="", no_wrap=True, overflow="ellipsis")
        ev = getattr(t, "evidence", None)
        if ev is not None:
            bits = [f"{ev.step}" if ev.step else "", f"exit {ev.exit_code}" if ev.exit_code is not None else "",
                    f"{ev.duration:.1f}s" if ev.duration is not None else ""]
            second.append("last step ", style="bold")
            second.append(clean_line(" ".join(b for b in bits if b)) + "  ")
        second.append(f"hash {str(self.pending.hash)[:16]}", style="dim")
        return Text("\n", end="", no_wrap=True, overflow="ellipsis").join([first, second])

    def _invariant_line(self) -> Text:
        """One line, worst first; ctrl+o (in the footer) lists them all."""
        line = summary(self.invariants, self.declared)
        text = Text("invariants ", style="bold", end="", no_wrap=True, overflow="ellipsis")
        text.append(line[0] if line else "none declared")
        return text

    def on_mount(self) -> None:
        self.query_one("#approve-invariants", Static).update(self._invariant_line())
        self.query_one("#approve-changed", Static).display = False
        self.query_one("#approve-drift", Static).display = bool(self.drifted)
        self._show_policy()
        self._fit(self.app.size.height)
        self.query_one("#confirm" if self.irreversible else "#comment", Input).focus()

    def _show_policy(self) -> int:
        """The policy line and the approvals given, with how each was verified; returns the lines shown."""
        lines = policy_lines(self.policy, self._latest or self.target, self.pending.step.name)
        box = self.query_one("#approve-policy", Static)
        box.display = bool(lines)
        box.update(Text("\n", end="", no_wrap=True, overflow="ellipsis").join(lines))
        self.policy_height = len(lines)
        return len(lines)

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """The argv box gets what the other rows leave (the rest scrolls inside it)."""
        # Borders 2, title, badge, label, facts 2, invariants, name label, name, error, comment, buttons, footer;
        # and the two lines saying what changed, while they show.
        fixed = 14 + (2 if self.changed else 0) + (2 if self.drifted else 0)
        fixed += self.policy_height
        # The step's description only where there is room to spare (it says what the argv does).
        described = bool(self.pending.step.description) and height >= TALL
        self.query_one("#step-description").display = described
        self.query_one("#argv-box").styles.max_height = max(3, height - fixed - (2 if described else 0))

    # -- following the ledger ------------------------------------------------------

    def follow(self, ledger: Any, invariants: Sequence[Any]) -> None:
        """A new ledger: update the invariants; if what would be approved changed, say so and hold."""
        self.invariants = list(invariants)
        self.query_one("#approve-invariants", Static).update(self._invariant_line())
        target = ledger.targets.get(self.target_name)
        try:
            now = self.app.controller.pending_command(ledger, self.target_name) if target is not None else None
        except HandoffError:
            now = None
        try:  # a second approval landing while this is open moves "1 of 2" on
            self.policy = self.app.controller.approval_policy(ledger, self.target_name)
        except HandoffError:
            self.policy = None
        self.now = now
        drift_now = drift(target) if target is not None else None
        self._latest = target
        if target is not None:
            self._show_policy()
            self._fit(self.app.size.height)
        if now is not None and now.hash == self.pending.hash and drift_now == self.drifted:
            return
        if target is None:
            what = "it is no longer in the file"
        elif now is None:
            reason = f" ({clean_line(target.reason)})" if target.reason else ""
            what = f"it is now {label(target.state)}{reason}"
        elif drift_now != self.drifted:
            what = "a checkpoint drift was recorded" if drift_now else "its checkpoint drift was reconciled"
        else:
            what = f"what would run changed (checkpoint now {clean_line(now.checkpoint or '(none)')})"
        self.changed = f"⚠ {clean_line(self.target_name)} changed while this was open: {what}."
        status = self.query_one("#approve-changed", Static)
        status.update(Text(self.changed + (" ctrl+r looks again." if now is not None else " Nothing to approve."), style="bold"))
        status.display = True
        self.query_one("#approve", Button).disabled = True
        self._fit(self.app.size.height)
        self.refresh_bindings()

    def action_look_again(self) -> None:
        if self.changed is None:
            return
        if self.now is None:
            self.notify(f"{clean_line(self.target_name)} waits on no approval now.", severity="warning", markup=False)
            return
        self.pending, self.changed = self.now, None
        self.target = self._latest if self._latest is not None else self.target
        self.query_one("#approve-drift", Static).update(self._drift_text())
        self.query_one("#approve-drift", Static).display = bool(self.drifted)
        self.query_one("#approve", Button).label = "Approve anyway" if self.drifted else "Approve"
        self.query_one("#approve-title", Label).update(self._title())
        self.query_one("#argv", ArgvView).set_argv(self.pending.argv)
        self.query_one("#facts", Static).update(self._facts())
        self.query_one("#step-description", Static).update(safe(self.pending.step.description or ""))
        self.query_one("#approve-changed", Static).display = False
        self.query_one("#approve", Button).disabled = not self._confirmed()
        self._fit(self.app.size.height)
        self.refresh_bindings()

    def action_invariants(self) -> None:
        self.app.push_screen(InvariantsScreen(self.invariants, self.declared))

    # -- confirming ----------------------------------------------------------------

    def _confirmed(self) -> bool:
        if not self.irreversible:
            return True
        typed = self.query_one("#confirm", Input).value
        return bool(typed) and typed == self.target_name  # nothing typed never confirms, whatever the name

    def _wrong_name(self) -> None:
        typed = self.query_one("#confirm", Input).value
        hint = f" (you typed {clean_line(typed)!r})" if typed else ""
        # One line that never wraps: the dialog must not move under the caret as the error shows.
        line = one_line(f"✗ {WRONG_NAME}{hint}")
        line.overflow = "ellipsis"
        self.query_one("#confirm-error", Static).update(line)
        self.query_one("#confirm", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "confirm":
            self.query_one("#confirm-error", Static).update("")
            self.query_one("#approve", Button).disabled = not self._confirmed() or self.changed is not None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "confirm":
            if self._confirmed():
                self.query_one("#comment", Input).focus()
            else:
                self._wrong_name()
        else:
            self._submit()

    def _submit(self) -> None:
        if not self._confirmed():
            self._wrong_name()
            return
        if self.changed is not None:
            self.notify("The target changed while this was open; look again (ctrl+r) before approving.",
                        severity="warning", markup=False)
            return
        comment = self.query_one("#comment", Input).value.strip() or None
        self.dismiss(ApproveResult(self.pending.step.name, comment, self.pending.hash, self.drifted))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "approve":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
