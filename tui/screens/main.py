"""The main screen: header, banners, summary, handoff note, target table, log and invariants.

Every operator action is a row of the one action table (`tui.screens.action_table`):
the key bindings, the footer, the help screen, the command palette and the `:` command
line are all built from it, nothing else. Every action, whichever way it is reached,
goes through one door (`tui.screens.dispatch.ActionDoor`): what read-only mode cannot do
is never offered, and refused with a "read-only: ..." note when reached anyway. Actions
never call the engine directly: they hand a typed request to the app, which runs it in
a worker. The table widget's own movement keys are on `TargetTable`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Input

from engine.api import HandoffError
from tui.attention import drift
from tui.cmdline import CommandInput, CommandSuggester
from tui.messages import Snapshot
from tui.registry import Action
from tui.screens.action_table import ACTIONS
from tui.screens.actions import LedgerActions
from tui.screens.batch_actions import BatchActions
from tui.screens.dispatch import ActionDoor
from tui.screens.help import Section
from tui.screens.view_actions import ViewActions
from tui.timefmt import ago, parse_ts
from tui.widgets.banners import Banners, broken_text, broken_words
from tui.widgets.cursor_line import CursorLine
from tui.widgets.header import HeaderBar, HeaderInfo
from tui.widgets.invariants import InvariantsPanel, summary
from tui.widgets.keybar import KeyBar
from tui.widgets.log_pane import LogPane, LogTail
from tui.widgets.note_panel import SHORT, NotePanel
from tui.widgets.summary import SummaryBar
from tui.widgets.target_table import TargetTable

if TYPE_CHECKING:
    from engine.api import Ledger
    from tui.host import AppHost

NARROW = 100  # below this many columns the side pane folds away (toggle with l)
STALE_TICK = 1.0  # seconds between repaints of "the state shown is Ns old" while the file is broken


class MainScreen(LedgerActions, ViewActions, BatchActions, Screen[None]):
    """The operator's view of one ledger.

    The key table below is generated from `tui.screens.action_table.ACTIONS`.
    """

    BINDINGS = ACTIONS.bindings()

    app: AppHost

    def __init__(self, initial: Snapshot | None = None) -> None:
        super().__init__(id="main")
        self.initial = initial
        self.ledger: Ledger | None = None
        self.snapshot: Snapshot | None = None
        self.broken: HandoffError | None = None
        self.good_at: datetime | None = None  # when the state shown was last read from a file that parsed
        self._side_user_choice: bool | None = None
        self.note_acknowledged = False
        self.note_expanded = False  # on a short screen: n shows the whole note panel
        self.since: list[str] = []
        self.door = ActionDoor(self, ACTIONS)
        # Workers can answer before this screen is mounted; such calls wait here.
        self._early: list[tuple[Any, tuple[Any, ...]]] | None = []

    def _defer(self, fn: Any, *args: Any) -> bool:
        """Queue `fn(*args)` for on_mount when not mounted yet; True if deferred (or gone)."""
        if self._early is None:
            return not self.is_attached  # unmounted while the app shuts down: nothing to paint
        self._early.append((fn, args))
        return True

    def compose(self) -> ComposeResult:
        ledger_dir = self.app.controller.ledger_dir
        yield HeaderBar(id="header")
        yield Banners(id="banners")
        yield SummaryBar(id="summary")
        yield NotePanel(id="note")
        with Horizontal(id="body"):
            with Vertical(id="main-col"):
                yield TargetTable(id="targets", clock=self.app.clock)
                yield CursorLine(id="cursor-line")
                yield LogTail(id="log-tail", ledger_dir=ledger_dir)
            with Vertical(id="side"):
                yield InvariantsPanel(id="invariants")
                yield LogPane(id="log", ledger_dir=ledger_dir)
        yield Input(placeholder="filter: regex words, state:failed, !not, a|b, is:attention   (enter keeps, esc clears)", id="filter")
        yield CommandInput(placeholder="approve NAME · filter TEXT · sort state · retry NAME · q   (tab completes, esc closes)",
                    id="cmdline", suggester=CommandSuggester(ACTIONS, lambda: self.app.read_only, self.door.words_for))
        yield KeyBar()

    def on_mount(self) -> None:
        for box in ("#filter", "#cmdline"):
            self.query_one(box, Input).display = False
        self.query_one("#cmdline", Input).border_title = ":"
        self.query_one("#side").border_title = "Session log · invariants"
        log = self.query_one(LogPane)
        log.border_title = "Session log"
        log.follow = True
        self.query_one(InvariantsPanel).border_title = "Invariants"
        self.query_one(TargetTable).focus()
        self.set_interval(STALE_TICK, self._tick_stale)
        if self.initial is not None:
            self.show_snapshot(self.initial)
        early, self._early = self._early or [], None
        for fn, args in early:
            fn(*args)

    # -- showing data --------------------------------------------------------------

    @property
    def table(self) -> TargetTable:
        return self.query_one(TargetTable)

    def show_snapshot(self, snapshot: Snapshot) -> set[str]:
        """Paint a new reading of the file; returns the changed target names."""
        if self._defer(self.show_snapshot, snapshot):
            return set()
        first = self.ledger is None
        previous = self.ledger
        ledger = snapshot.ledger
        self.snapshot, self.ledger, self.broken = snapshot, ledger, None
        self.good_at = self.app.clock()
        banners = self.query_one(Banners)
        banners.show_broken(None)
        banners.show_missing(snapshot.missing)
        banners.show_rollback(snapshot.rollback)
        table = self.table
        table.set_stale(None)
        changed = table.set_ledger(ledger, snapshot.missing)
        self.query_one(SummaryBar).marked = table.marked_count  # a mark goes with a row that left the file
        # Header and summary from this one reading, in this one handler: they never disagree on screen.
        self.query_one(SummaryBar).show(ledger, missing=len(snapshot.missing), seq=snapshot.seq)
        self._show_header()
        if first or previous is None or (ledger.handoff_note, ledger.handoff_note_at) != (previous.handoff_note, previous.handoff_note_at):
            if not first:
                self.note_acknowledged = False
            self._show_note(open_it=first and bool(ledger.handoff_note or self.since))
        self.query_one(InvariantsPanel).show(snapshot.invariants, ledger.invariants)
        if first:
            # Open on what needs a human, not on the first (usually finished) rows.
            self.call_after_refresh(self._open_on_attention)
        self._show_cursor_line()
        self.refresh_bindings()
        return changed

    def _open_on_attention(self) -> None:
        """The first page holds every row that needs a person: when ledger order scatters
        them past one page, the table opens sorted by state (o changes it back)."""
        table = self.table
        names = table.attention()
        if len(names) > 1 and table.sort_key == "ledger":
            order = {n: i for i, n in enumerate(table.visible_names())}
            span = order[names[-1]] - order[names[0]] + 1
            if span > max(1, table.scrollable_content_region.height - 1):
                table.set_sort("state")
                self.notify(f"Sorted by state: {len(names)} targets need a person (o changes the sort).",
                            timeout=4, markup=False)
        table.first_attention()

    def _show_cursor_line(self) -> None:
        name = self.table.cursor_name
        target = self.ledger.targets.get(name) if self.ledger is not None and name else None
        self.query_one(CursorLine).show(name, target)

    def on_target_table_highlighted(self, message: TargetTable.Highlighted) -> None:
        self._show_cursor_line()

    def on_target_table_marks_changed(self, message: TargetTable.MarksChanged) -> None:
        self.query_one(SummaryBar).show_marked(message.count)

    def show_since(self, lines: list[str]) -> None:
        """The "since you last looked" digest, shown in the note panel."""
        if self._defer(self.show_since, lines):
            return
        self.since = lines
        if lines:
            self._show_note(open_it=True)

    def show_chain(self, breaks: list[str]) -> None:
        """The journal chain's verdict (tui.chain): a break is a banner until it verifies again."""
        if self._defer(self.show_chain, breaks):
            return
        self.query_one(Banners).show_chain(breaks, self.app.controller.location)

    def show_broken(self, error: HandoffError) -> None:
        """The file does not parse: say where, and mark everything shown as the last good state."""
        if self._defer(self.show_broken, error):
            return
        self.broken = error
        self._tick_stale()

    def _stale_age(self) -> str:
        return ago((self.app.clock() - self.good_at).total_seconds()) if self.good_at else "?"

    def _tick_stale(self) -> None:
        if self.broken is None:
            return
        age = self._stale_age()
        revision = self.ledger.revision if self.ledger is not None else None
        self.query_one(Banners).show_broken(broken_text(self.broken, age, revision))
        self.table.set_stale(f"STALE: last good state, {age} old")
        self._show_header()

    def header_info(self) -> HeaderInfo:
        """What the header shows now (the detail screen shows the same)."""
        ledger = self.ledger
        app = self.app
        if ledger is None:
            return HeaderInfo(read_only=app.read_only, read_only_reason=app.read_only_reason, actor=app.controller.actor)
        lease = self.snapshot.lease if self.snapshot else None
        budget = ""
        if ledger.budget is not None:
            bits = [f"{ledger.budget.steps} steps" if ledger.budget.steps else "",
                    f"{ledger.budget.minutes:g} min" if ledger.budget.minutes else ""]
            budget = ", ".join(b for b in bits if b)
        started = parse_ts(ledger.session.started_at) if ledger.session else None
        invariants = self.snapshot.invariants if self.snapshot else []

        def lease_field(name: str) -> Any:
            return getattr(lease, name, None) if lease is not None else None

        return HeaderInfo(
            task=ledger.task,
            owner_shift=ledger.owner_shift,
            path=app.controller.location,
            environment=ledger.environment,
            read_only=app.read_only,
            read_only_reason=app.read_only_reason,
            actor=app.controller.actor,
            session_status=lease_field("status") or ("live" if ledger.session else "none"),
            session_holder=lease_field("holder") or "",
            session_detail=lease_field("detail") or "",
            heartbeat_age=lease_field("heartbeat_age"),
            allow_unenforced=bool(lease_field("allow_unenforced")),
            budget=budget,
            budget_used=lease_field("budget_used"),
            tokens_used=lease_field("tokens_used"),
            tokens_budget=lease_field("tokens_budget"),
            cost_usd=lease_field("cost_usd"),
            runtime=(app.clock() - started).total_seconds() if started else None,
            phase=lease_field("phase"),
            is_paused=ledger.paused is not None,
            paused_by=ledger.paused.by if ledger.paused else None,
            paused_why=ledger.paused.why if ledger.paused else None,
            paused_at=ledger.paused.at if ledger.paused else None,
            revision=ledger.revision,
            stale=f"{broken_words(self.broken).short}; showing the state of {self._stale_age()} ago" if self.broken else None,
            invariants=summary(invariants, len(ledger.invariants)),
            awaiting=ledger.counts().get("awaiting_approval", 0),  # the summary bar's own count
            drifted=sum(1 for t in ledger.targets.values() if drift(t) is not None),
            stop_requested_by=(ledger.session.stop_requested_by or "someone")
            if ledger.session is not None and ledger.session.stop_requested else None,
            seq=self.snapshot.seq if self.snapshot else 0,
        )

    def _show_header(self) -> None:
        if self.ledger is not None:
            self.query_one(HeaderBar).show(self.header_info())

    def _show_note(self, open_it: bool = False) -> None:
        ledger = self.ledger
        if ledger is None:
            return
        panel = self.query_one(NotePanel)
        panel.show(ledger.handoff_note, ledger.handoff_note_by, ledger.handoff_note_at, self.note_acknowledged, self.since,
                   previous=ledger.previous_note, read_only=self.app.read_only,
                   collapsed=self.size.height < SHORT and not self.note_expanded)
        if open_it:
            panel.display = True

    def on_resize(self, event: Resize) -> None:
        # Fold the side pane at 80x24 unless the operator chose otherwise.
        if self._side_user_choice is None:
            self._set_side(event.size.width >= NARROW)
        self._show_note()

    def _set_side(self, shown: bool) -> None:
        self.query_one("#side").display = shown
        # With the pane folded, the log's last two lines stay in view under the table, and the
        # selected row in full (the table has no room for its next action).
        self.query_one(LogTail).display = not shown
        self.query_one(CursorLine).display = not shown

    # -- bindings ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("filter", "command_line") and isinstance(self.focused, Input):
            return False  # a text box has the focus: the key is typed into it, in order
        if action == "submit_box":
            return self.focused is not None and self.focused.id in ("filter", "cmdline")
        if action == "clear_filter":
            return (self.focused is not None and self.focused.id in ("filter", "cmdline")) or bool(self.table.filter_text)
        paused = self.ledger is not None and self.ledger.paused is not None
        if action == "pause":
            return not paused
        if action == "unpause":
            return paused
        if action in ("accept_removal", "accept_rollback"):
            snap = self.snapshot
            return snap is not None and bool(snap.missing if action == "accept_removal" else snap.rollback)
        return True

    def offered(self, action: str) -> bool:
        """Whether footer, help and palette offer `action` now: never what read-only mode cannot do."""
        return self.door.offered(action)

    def visible_actions(self) -> list[Action]:
        """Every keyed action offered now: the source of help and palette."""
        return self.door.visible()

    def perform(self, action: Action, arg: str = "") -> None:
        """Carry out one row of the action table (keys, `:` and the palette all come here)."""
        self.door.perform(action, arg)

    def approve_from(self, name: str) -> None:
        """The detail screen's `a`: the table's approve row on `name`, through the same door."""
        self.perform(ACTIONS.by_name["approve"], name)

    def run_line(self, line: str) -> None:
        """Carry out one `:` command line."""
        self.door.run_line(line)

    def help_sections(self) -> list[Section]:
        """Help, from the action table (after read-only mode took out what it cannot do)."""
        return self.door.help_sections([b for b in TargetTable.BINDINGS if isinstance(b, Binding)])

    def add_journal(self, records: list[dict[str, Any]]) -> None:
        """New journal lines for the log pane (and the two-line tail under the table)."""
        if self._defer(self.add_journal, records):
            return
        self.query_one(LogPane).add_records(records)
        self.query_one(LogTail).add_records(records)

    def batch_approved(self, names: list[str]) -> None:
        """Unmark what a batch approval approved (the rest of the marks stay)."""
        self.table.set_marked(names, False)

    def mark_acknowledged(self) -> None:
        self.note_acknowledged = True
        self._show_note()

    def header_text(self) -> str:
        """The header as plain text (tests and e2e read it)."""
        header = self.query_one(HeaderBar)
        return "\n".join(line.plain for line in header.lines(header.size.width or 80))


MainScreen.__doc__ = f"{MainScreen.__doc__}\n{ACTIONS.key_table()}\n"

__all__ = ["MainScreen"]
