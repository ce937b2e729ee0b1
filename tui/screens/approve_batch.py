"""The batch approval dialog: one step approved on every marked target, for people who have looked.

It lists every marked target with its step, its full command (one argument a line,
invisible characters shown as escapes: `ArgvView`), its checkpoint and its approval
hash, and a drifted target gets the single dialog's drift warning. As
`handoff approve --step STEP --targets PATTERN` asks on a terminal, the person types the
step's name and then how many targets; Approve stays disabled until both are right.

The yes carries each target's hash and the drift shown for it (`BatchResult`); the engine
records one approval per target or none, and refuses the batch if a target's drift is no
longer the one shown (a drift recorded before the next reading reached `follow`). The dialog follows the live ledger: once a target's command, checkpoint
or drift changes, or it leaves the file, it says which and holds (the engine would refuse
the batch anyway); Esc, then `A` again, shows it as it is now. Writes elsewhere in the
ledger (a session busy on other targets) neither hold nor refuse it.
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

from engine.api import HandoffError
from tui.attention import drift
from tui.policy import policy_lines
from tui.screens.approve import drift_text
from tui.text import clean_line, one_line
from tui.widgets.argv_view import ArgvView
from tui.widgets.keybar import KeyBar


@dataclass(frozen=True)
class BatchItem:
    """One marked target as the dialog shows it: its name, the target, what approving it binds, its policy."""

    name: str
    target: Any
    pending: Any  # engine.api.PendingCommand
    policy: str | None = None


@dataclass(frozen=True)
class BatchResult:
    """The operator's yes: the step, (target, hash shown) for each, an optional comment, and
    (target, drift shown: None for none) for each."""

    step: str
    expect: tuple[tuple[str, str], ...]
    comment: str | None
    drift: tuple[tuple[str, str | None], ...] = ()


class BatchApproveScreen(ModalScreen[BatchResult | None]):
    """Approve one awaiting step on every marked target.

    | Key | Action | What it does |
    |---|---|---|
    | escape | cancel | Close without approving anything |
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="batch.cancel")]

    DEFAULT_CSS = """
    BatchApproveScreen #batch-list { height: auto; }
    """

    def __init__(self, step: str, items: Sequence[BatchItem], revision: int | None, environment: str | None = None,
                 comment: str = "") -> None:
        super().__init__(classes="modal-screen")
        self.comment = comment  # the comment a refused batch of this step left (tui.mutations.take_draft)
        self.step = step
        self.items = list(items)
        self.revision = revision
        self.environment = environment
        self.changed: str | None = None  # what changed under the dialog (it then holds)

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def drifted(self) -> list[str]:
        return [i.name for i in self.items if drift(i.target)]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog approve -danger"):
            yield Label(self._title(), id="batch-title")
            yield Label(" ⚠ IRREVERSIBLE: this step cannot be undone, on any of them ", id="irreversible",
                        classes="-danger-badge")
            with VerticalScroll(id="batch-list"):
                for n, item in enumerate(self.items):
                    yield Static(self._head(n, item), classes="batch-head")
                    yield ArgvView(item.pending.argv, id=f"argv-{n}", classes="command")
                    for line in policy_lines(item.policy, item.target, item.pending.step.name):
                        yield Static(line, classes="batch-policy")
                    if drift(item.target):
                        yield Static(drift_text(drift(item.target)), classes="error-text batch-drift")
            yield Static(id="batch-changed", classes="error-text")
            yield Label(Text.assemble("Type the step's name (", (clean_line(self.step), "bold"),
                                      ") to approve it on these targets:"))
            yield Input(placeholder="the step's name", id="confirm-step", compact=True)
            yield Label(Text.assemble("Type how many targets you approve it on (", (str(self.count), "bold"), "):"))
            yield Input(placeholder="how many", id="confirm-count", compact=True)
            yield Static("", id="confirm-error", classes="error-text")
            yield Input(self.comment, placeholder="comment (optional, goes to the journal of each)", id="comment", compact=True)
            with Horizontal(classes="buttons"):
                yield Button(f"Approve all {self.count}" + (" anyway" if self.drifted else ""), id="approve",
                             variant="error", disabled=True, compact=True)
                yield Button("Cancel", id="cancel", compact=True)
        yield KeyBar()

    def _title(self) -> Text:
        title = Text("Approve ", style="bold", end="")
        title.append(clean_line(self.step), style="bold")
        title.append(f" on {self.count} marked target(s)", style="bold")
        if self.environment:
            title.append(f"  environment: {clean_line(self.environment)}", style="bold reverse")
        return title

    def _head(self, n: int, item: BatchItem) -> Text:
        """`1/3 web-02  cutover  checkpoint 0/9A3F  hash <full>`: one line a target, the full hash."""
        head = Text(f"{n + 1}/{self.count} ", style="bold", end="")
        head.append(clean_line(item.name), style="bold")
        head.append("  step ")
        head.append(clean_line(item.pending.step.name))
        head.append("  checkpoint ")
        head.append(clean_line(item.pending.checkpoint or "(none)"))
        head.append("  asked by ")
        head.append(clean_line(getattr(item.target, "awaiting_by", None) or "?"))
        head.append("\nhash ", style="bold")
        head.append(clean_line(item.pending.hash))
        return head

    def on_mount(self) -> None:
        self.query_one("#batch-changed", Static).display = False
        self._fit(self.app.size.height)
        self.query_one("#confirm-step", Input).focus()

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        # Borders 2, title, badge, two labels and two fields, error, comment, buttons, footer;
        # the list gets the rest and scrolls.
        fixed = 13 + (2 if self.changed else 0)
        self.query_one("#batch-list").styles.max_height = max(4, height - fixed)

    # -- following the ledger ------------------------------------------------------

    def follow(self, ledger: Any) -> None:
        """A new reading: if anything the batch is bound to moved, say what, and hold."""
        if self.changed is not None:
            return
        what: list[str] = []
        for item in self.items:
            target = ledger.targets.get(item.name)
            if target is None:
                what.append(f"{clean_line(item.name)} is no longer in the file")
                continue
            try:
                now = self.app.controller.pending_command(ledger, item.name)
            except HandoffError:
                what.append(f"{clean_line(item.name)} is now {clean_line(target.state)}")
                continue
            if now.hash != item.pending.hash:
                what.append(f"what {clean_line(item.name)} would run changed (hash now {clean_line(now.hash)[:16]})")
            elif drift(target) != drift(item.target):
                what.append(f"{clean_line(item.name)}'s checkpoint drift changed")
        if not what:
            return
        self.changed = "⚠ Changed while this was open: " + "; ".join(what) + "."
        status = self.query_one("#batch-changed", Static)
        status.update(Text(self.changed + " Nothing can be approved from this dialog: Esc, then A shows it as it is now.",
                           style="bold"))
        status.display = True
        self.query_one("#approve", Button).disabled = True
        self._fit(self.app.size.height)

    # -- confirming ----------------------------------------------------------------

    def _typed(self) -> tuple[str, str]:
        return self.query_one("#confirm-step", Input).value, self.query_one("#confirm-count", Input).value.strip()

    def _problem(self) -> str | None:
        """What is wrong with what was typed (None: both right)."""
        step, count = self._typed()
        if not step or step != self.step:  # nothing typed never confirms, whatever the step is called
            hint = f" (you typed {clean_line(step)!r})" if step else ""
            return f"✗ Type the step's name exactly to approve it{hint}"
        if count != str(self.count):
            return f"✗ {clean_line(count) or 'nothing'} is not {self.count}, the number of targets shown"
        return None

    def _say(self, problem: str) -> None:
        line = one_line(problem)
        line.overflow = "ellipsis"
        self.query_one("#confirm-error", Static).update(line)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id in ("confirm-step", "confirm-count"):
            self.query_one("#confirm-error", Static).update("")
            self.query_one("#approve", Button).disabled = self._problem() is not None or self.changed is not None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        problem = self._problem()
        if event.input.id == "confirm-step":
            if self._typed()[0] == self.step:
                self.query_one("#confirm-count", Input).focus()
            else:
                self._say(problem or "")
        elif event.input.id == "confirm-count":
            if problem is None:
                self.query_one("#comment", Input).focus()
            else:
                self._say(problem)
        else:
            self._submit()

    def _submit(self) -> None:
        problem = self._problem()
        if problem is not None:
            self._say(problem)
            return
        if self.changed is not None:
            self.notify("Something changed while this was open; nothing was approved. Esc, then A shows it as it is now.",
                        severity="warning", markup=False)
            return
        comment = self.query_one("#comment", Input).value.strip() or None
        self.dismiss(BatchResult(self.step, tuple((i.name, i.pending.hash) for i in self.items), comment,
                                 tuple((i.name, drift(i.target)) for i in self.items)))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "approve":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
