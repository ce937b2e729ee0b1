"""The main screen: header, summary, handoff note, target table, log and invariants.

Every operator action is a `Binding` here with an `id` and a description, so the
footer, the help screen and the command palette all come from this one table.
`check_action` hides every mutating action in read-only mode (footer, palette
and help), and each action refuses again when reached anyhow. Actions never
call the engine directly: they ask the app, which runs the engine in workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from engine.errors import HandoffError
from engine.model import BASE_STATES, SUMMARY_ORDER
from tui.screens.approve import ApproveResult, ApproveScreen
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen
from tui.screens.reason import Reason, ReasonPrompt
from tui.text import clean_line
from tui.widgets.header import HeaderBar, HeaderInfo
from tui.widgets.invariants import InvariantsPanel
from tui.widgets.log_pane import LogPane
from tui.widgets.note_panel import NotePanel
from tui.widgets.summary import SummaryBar
from tui.widgets.target_table import TargetTable

if TYPE_CHECKING:
    from engine.model import Ledger
    from tui.app import HandoffApp
    from tui.messages import Snapshot

# Actions that change the ledger or start/stop a process: absent in read-only mode.
MUTATING = frozenset({
    "approve", "unapprove", "reject", "edit_note", "ack_note", "pause", "unpause",
    "retry", "block", "unblock", "start_session", "request_stop",
})
NARROW = 100  # below this many columns the side pane folds away (toggle with l)

# Longer help for the command palette, per action.
ACTION_HELP: dict[str, str] = {
    "approve": "Approve the selected target's awaiting step (shows the exact command)",
    "unapprove": "Withdraw the selected target's unused approval (the next session asks again)",
    "reject": "Reject the selected target's awaiting step, with a reason (blocks it)",
    "edit_note": "Edit the handoff note (detects edits made underneath)",
    "toggle_note": "Show or hide the handoff note panel",
    "ack_note": "Acknowledge the handoff note as the incoming operator (journaled)",
    "pause": "Pause the ledger: sessions stop before their next step",
    "unpause": "Unpause the ledger",
    "retry": "Retry the selected failed target",
    "block": "Block the selected target, with a reason",
    "unblock": "Unblock the selected target into a chosen state, with a reason",
    "start_session": "Start an agent session (handoff resume) as its own detached process",
    "request_stop": "Ask the running session to stop after its current step",
    "filter": "Filter targets by name, state (state:failed) or any text",
    "sort": "Cycle the sort: ledger order, state, name, age",
    "toggle_side": "Show or hide the log and invariants pane",
    "toggle_follow": "Follow the end of the session log, or stop following to scroll back",
    "reload": "Re-read the ledger and the journal now",
    "cycle_theme": "Switch to the next theme (dark, light, high contrast)",
    "help": "Show every key",
    "quit": "Quit handoff-tui (a running session keeps running)",
}


class MainScreen(Screen[None]):
    """The operator's view of one ledger.

    | Key | Action | What it does |
    |---|---|---|
    | a | approve | Approve the selected target's awaiting step |
    | U | unapprove | Withdraw an unused approval on the selected target |
    | x | reject | Reject it, with a reason |
    | e | edit_note | Edit the handoff note |
    | n | toggle_note | Show / hide the handoff note |
    | N | ack_note | Acknowledge the handoff note |
    | p | pause / unpause | Pause or unpause the ledger, with a reason |
    | r | retry | Retry a failed target (force + reason when the engine insists) |
    | b | block | Block the selected target, with a reason |
    | u | unblock | Unblock the selected target, with a reason |
    | s | start_session | Start `handoff resume`, detached |
    | S | request_stop | Ask the session to stop after its current step |
    | / | filter | Filter the table |
    | o | sort | Cycle the sort order |
    | l | toggle_side | Show / hide the log and invariants |
    | F | toggle_follow | Follow the log / scroll back |
    | R | reload | Re-read ledger and journal |
    | t | cycle_theme | Next theme |
    | ? | help | All keys |
    | q | quit | Quit |
    | escape | clear_filter | Clear the filter |
    """

    BINDINGS = [
        Binding("a", "approve", "Approve", id="main.approve"),
        Binding("U", "unapprove", "Unapprove", id="main.unapprove", show=False),
        Binding("x", "reject", "Reject", id="main.reject"),
        Binding("e", "edit_note", "Edit note", id="main.edit_note"),
        Binding("n", "toggle_note", "Note", id="main.toggle_note", show=False),
        Binding("N", "ack_note", "Ack note", id="main.ack_note", show=False),
        Binding("p", "pause", "Pause", id="main.pause"),
        Binding("p", "unpause", "Unpause", id="main.unpause"),
        Binding("r", "retry", "Retry", id="main.retry", show=False),
        Binding("b", "block", "Block", id="main.block", show=False),
        Binding("u", "unblock", "Unblock", id="main.unblock", show=False),
        Binding("s", "start_session", "Start session", id="main.start_session", show=False),
        Binding("S", "request_stop", "Stop session", id="main.request_stop", show=False),
        # Priority, and the focus moves at once: "/db-18" typed in one burst (a paste,
        # a laggy SSH link) must filter, not run `b` (block) on the table.
        Binding("slash", "filter", "Filter", id="main.filter", key_display="/", priority=True),
        Binding("o", "sort", "Sort", id="main.sort", show=False),
        Binding("l", "toggle_side", "Log pane", id="main.toggle_side", show=False),
        Binding("F", "toggle_follow", "Follow log", id="main.toggle_follow", show=False),
        Binding("R", "reload", "Reload", id="main.reload", show=False),
        Binding("t", "cycle_theme", "Theme", id="main.cycle_theme", show=False),
        Binding("question_mark", "help", "Help", id="main.help", key_display="?"),
        Binding("q", "quit", "Quit", id="main.quit"),
        Binding("escape", "clear_filter", "Clear filter", id="main.clear_filter", show=False),
    ]

    app: "HandoffApp"

    def __init__(self, initial: "Ledger | None" = None) -> None:
        super().__init__(id="main")
        self.initial = initial
        self.ledger: "Ledger | None" = None
        self.snapshot: "Snapshot | None" = None
        self._side_user_choice: bool | None = None
        self.note_acknowledged = False
        self.since: list[str] = []
        # Workers can answer before this screen is mounted; such calls wait here.
        self._early: list[tuple[Any, tuple[Any, ...]]] | None = []

    def _defer(self, fn: Any, *args: Any) -> bool:
        """Queue `fn(*args)` for on_mount when not mounted yet; True if deferred."""
        if self._early is None:
            return False
        self._early.append((fn, args))
        return True

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield Static(id="banner")
        yield SummaryBar(id="summary")
        yield NotePanel(id="note")
        with Horizontal(id="body"):
            yield TargetTable(id="targets", clock=self.app.clock)
            with Vertical(id="side"):
                yield InvariantsPanel(id="invariants")
                yield LogPane(id="log")
        yield Input(placeholder="filter: words, state:failed   (enter keeps it, esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#banner", Static).display = False
        self.query_one("#filter", Input).display = False
        self.query_one("#side").border_title = "Session log · invariants"
        log = self.query_one(LogPane)
        log.border_title = "Session log"
        log.follow = True
        self.query_one(InvariantsPanel).border_title = "Invariants"
        self.query_one(TargetTable).focus()
        if self.initial is not None:
            self.show_ledger(self.initial)
        early, self._early = self._early or [], None
        for fn, args in early:
            fn(*args)

    # -- showing data --------------------------------------------------------------

    @property
    def table(self) -> TargetTable:
        return self.query_one(TargetTable)

    def show_ledger(self, ledger: "Ledger") -> set[str]:
        """Paint a new ledger; returns the changed target names."""
        if self._defer(self.show_ledger, ledger):
            return set()
        first = self.ledger is None
        previous = self.ledger
        self.ledger = ledger
        self.query_one("#banner", Static).display = False
        changed = self.table.set_ledger(ledger)
        self.query_one(SummaryBar).show(ledger)
        self._show_header()
        if first or previous is None or (ledger.handoff_note, ledger.handoff_note_at) != (previous.handoff_note, previous.handoff_note_at):
            if not first:
                self.note_acknowledged = False
            self._show_note(open_it=first and bool(ledger.handoff_note or self.since))
        if first:
            self.query_one(InvariantsPanel).show([], ledger.invariants)
        self.refresh_bindings()
        return changed

    def show_snapshot(self, snapshot: "Snapshot") -> set[str]:
        """Paint the ledger plus invariants and the lease."""
        if self._defer(self.show_snapshot, snapshot):
            return set()
        self.snapshot = snapshot
        changed = self.show_ledger(snapshot.ledger)
        self.query_one(InvariantsPanel).show(snapshot.invariants, snapshot.ledger.invariants)
        self._show_header()
        return changed

    def show_since(self, lines: list[str]) -> None:
        """The "since you last looked" digest, shown in the note panel."""
        if self._defer(self.show_since, lines):
            return
        self.since = lines
        if lines:
            self._show_note(open_it=True)

    def show_broken(self, error: HandoffError) -> None:
        """The file does not parse: say where, keep the last good state on screen."""
        if self._defer(self.show_broken, error):
            return
        banner = self.query_one("#banner", Static)
        rev = f" (rev {self.ledger.revision})" if self.ledger is not None else ""
        text = Text("⚠ ledger does not parse: ", style="bold", end="")
        text.append(clean_line(str(error)))
        text.append(f"  Showing the last good state{rev}; nothing is written until it parses again.")
        banner.update(text)
        banner.display = True

    def _show_header(self) -> None:
        ledger = self.ledger
        if ledger is None:
            return
        app = self.app
        lease = self.snapshot.lease if self.snapshot else None
        budget = ""
        if ledger.budget is not None:
            bits = [f"{ledger.budget.steps} steps" if ledger.budget.steps else "",
                    f"{ledger.budget.minutes:g} min" if ledger.budget.minutes else ""]
            budget = ", ".join(b for b in bits if b)
        info = HeaderInfo(
            task=ledger.task,
            owner_shift=ledger.owner_shift,
            path=app.controller.location,
            environment=ledger.environment,
            read_only=app.read_only,
            read_only_reason=app.read_only_reason,
            actor=app.controller.actor,
            session_status=getattr(lease, "status", "none") if lease else ("live" if ledger.session else "none"),
            session_holder=getattr(lease, "holder", "") if lease else "",
            session_detail=getattr(lease, "detail", "") if lease else "",
            heartbeat_age=getattr(lease, "heartbeat_age", None) if lease else None,
            budget=budget,
            budget_used=getattr(lease, "budget_used", None) if lease else None,
            phase=getattr(lease, "phase", None) if lease else None,
            is_paused=ledger.paused is not None,
            paused_by=ledger.paused.by if ledger.paused else None,
            paused_why=ledger.paused.why if ledger.paused else None,
            paused_at=ledger.paused.at if ledger.paused else None,
            revision=ledger.revision,
        )
        self.query_one(HeaderBar).show(info)

    def _show_note(self, open_it: bool = False) -> None:
        ledger = self.ledger
        if ledger is None:
            return
        panel = self.query_one(NotePanel)
        panel.show(ledger.handoff_note, ledger.handoff_note_by, ledger.handoff_note_at, self.note_acknowledged, self.since,
                   previous=ledger.previous_note)
        if open_it:
            panel.display = True

    def on_resize(self, event: Resize) -> None:
        # Fold the side pane at 80x24 unless the operator chose otherwise.
        if self._side_user_choice is None:
            self.query_one("#side").display = event.size.width >= NARROW

    # -- bindings ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MUTATING and self.app.read_only:
            return False
        paused = self.ledger is not None and self.ledger.paused is not None
        if action == "pause":
            return not paused
        if action == "unpause":
            return paused
        return True

    def visible_actions(self) -> list[tuple[Binding, str]]:
        """(binding, help) for every action allowed now: the source of help and palette."""
        seen: set[str] = set()
        out: list[tuple[Binding, str]] = []
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action in seen or binding.action == "clear_filter":
                continue
            if self.check_action(binding.action, ()) is not True:
                continue
            seen.add(binding.action)
            out.append((binding, ACTION_HELP.get(binding.action, binding.description)))
        return out

    def _refused(self, action: str) -> bool:
        """True (and say so) when a mutating action is reached in read-only mode."""
        if action in MUTATING and self.app.read_only:
            self.notify(f"Read-only: {action.replace('_', ' ')} is not available.", severity="warning", markup=False)
            return True
        return False

    def _selected(self, *, states: tuple[str, ...] = (), verb: str = "") -> str | None:
        """The target under the cursor, if it is in one of `states` (when given)."""
        name = self.table.cursor_name
        if name is None or self.ledger is None:
            self.notify("No target selected.", severity="warning", markup=False)
            return None
        target = self.ledger.targets.get(name)
        if target is None:
            return None
        if states and target.state not in states:
            self.notify(f"{clean_line(name)} is {target.state}; only {' or '.join(states)} targets can be {verb}.",
                        severity="warning", markup=False)
            return None
        return name

    # -- actions -------------------------------------------------------------------

    def action_approve(self) -> None:
        if self._refused("approve") or self.ledger is None:
            return
        name = self._selected(states=("awaiting_approval",), verb="approved")
        if name is None:
            return
        ledger = self.ledger
        try:
            pending = self.app.controller.pending_command(ledger, name)
        except HandoffError as error:
            self.app.show_error(error)
            return
        invariants = self.snapshot.invariants if self.snapshot else []

        def done(result: ApproveResult | None) -> None:
            if result is not None:
                self.app.mutate("approve", name, result.step, result.comment)

        self.app.push_screen(ApproveScreen(name, ledger.targets[name], pending, invariants), done)

    def action_unapprove(self) -> None:
        if self._refused("unapprove") or self.ledger is None:
            return
        name = self._selected()
        if name is None:
            return
        if not any(not a.used_at for a in self.ledger.targets[name].approvals):
            self.notify(f"{clean_line(name)} holds no unused approval to withdraw.", severity="warning", markup=False)
            return
        self.app.mutate("unapprove", name)

    def action_reject(self) -> None:
        if self._refused("reject"):
            return
        name = self._selected(states=("awaiting_approval",), verb="rejected")
        if name is None:
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("reject", name, reason.text)

        self.app.push_screen(ReasonPrompt(f"Reject {name}", "The target will be blocked with your reason.",
                                          ok_label="Reject", danger=True), done)

    def action_edit_note(self) -> None:
        if self._refused("edit_note") or self.ledger is None:
            return
        self.app.edit_note(self.ledger.handoff_note or "", base=self.ledger.handoff_note or "")

    def action_toggle_note(self) -> None:
        panel = self.query_one(NotePanel)
        panel.display = not panel.display

    def action_ack_note(self) -> None:
        if self._refused("ack_note"):
            return
        self.app.mutate("ack_note")

    def action_pause(self) -> None:
        if self._refused("pause"):
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("pause", reason.text)

        self.app.push_screen(ReasonPrompt("Pause the ledger", "Sessions stop before their next step until unpaused.",
                                          ok_label="Pause"), done)

    def action_unpause(self) -> None:
        if self._refused("unpause"):
            return
        self.app.mutate("unpause")

    def action_retry(self) -> None:
        if self._refused("retry"):
            return
        name = self._selected(states=("failed",), verb="retried")
        if name is not None:
            self.app.mutate("retry", name)

    def action_block(self) -> None:
        if self._refused("block"):
            return
        name = self._selected()
        if name is None:
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("block", name, reason.text)

        self.app.push_screen(ReasonPrompt(f"Block {name}", "Sessions will not touch it until it is unblocked.",
                                          ok_label="Block", danger=True), done)

    def action_unblock(self) -> None:
        if self._refused("unblock") or self.ledger is None:
            return
        name = self._selected(states=("blocked", "failed"), verb="unblocked")
        if name is None:
            return
        # "queued" first: starting a target over is the usual way back; the rest in summary order.
        order = {s: i for i, s in enumerate(SUMMARY_ORDER)} | {"queued": -1}
        states = sorted((s for s in self.ledger.states() if s not in ("blocked", "failed", "awaiting_approval")),
                        key=lambda s: (order.get(s, 99), s))

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("unblock", name, reason.choice or "queued", reason.text)

        self.app.push_screen(ReasonPrompt(f"Unblock {name}", "Choose the state it goes back to.", ok_label="Unblock",
                                          choices=states or list(BASE_STATES), choice_label="Back to state"), done)

    def action_start_session(self) -> None:
        if self._refused("start_session"):
            return
        self.app.mutate("start_session")

    def action_request_stop(self) -> None:
        if self._refused("request_stop"):
            return
        self.app.mutate("request_stop")

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if box.has_focus:
            # The priority binding sees "/" before the box does: type it.
            box.insert_text_at_cursor("/")
            return
        box.display = True
        self.set_focus(box)  # not box.focus(): that waits a turn, and keys behind "/" would miss the box

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = bool(event.value)
            self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display or self.table.filter_text:
            box.value = ""
            box.display = False
            self.table.set_filter("")
            self.table.focus()

    def action_sort(self) -> None:
        key = self.table.cycle_sort()
        self.notify(f"Sorted by {key}", timeout=2)

    def action_toggle_side(self) -> None:
        side = self.query_one("#side")
        side.display = not side.display
        self._side_user_choice = side.display

    def action_toggle_follow(self) -> None:
        log = self.query_one(LogPane)
        log.follow = not log.follow

    def action_reload(self) -> None:
        self.app.reload()

    def action_cycle_theme(self) -> None:
        self.app.cycle_theme()

    def action_help(self) -> None:
        keys = [(b.key_display or b.key, h) for b, h in self.visible_actions()]
        keys.append(("enter", "Open the selected target's detail and history"))
        mode = "READ-ONLY: actions that change the ledger are not available." if self.app.read_only else \
            f"OPERATOR: acting as {clean_line(self.app.controller.actor)}."
        self.app.push_screen(HelpScreen(keys, mode))

    async def action_quit(self) -> None:
        await self.app.action_quit()

    def on_target_table_selected(self, message: TargetTable.Selected) -> None:
        if self.ledger is None or message.name not in self.ledger.targets:
            return
        screen = DetailScreen(message.name, self.ledger.targets[message.name])
        self.app.push_screen(screen)
        self.app.load_history(message.name, screen)

    def add_journal(self, records: list[dict[str, Any]]) -> None:
        """New journal lines for the log pane."""
        if self._defer(self.add_journal, records):
            return
        self.query_one(LogPane).add_records(records)

    def mark_acknowledged(self) -> None:
        self.note_acknowledged = True
        self._show_note()

    def header_text(self) -> str:
        """The header as plain text (tests and e2e read it)."""
        return " ".join(str(label.render()) for label in self.query_one(HeaderBar).query("Label") if label.display)


__all__ = ["MainScreen", "MUTATING"]
