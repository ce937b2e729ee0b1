"""The main screen: header, banners, summary, handoff note, target table, log and invariants.

Every operator action is a `Binding` here (or on the table) with an `id`, a short
description for the footer and a tooltip for help and the palette: the footer,
the help screen and the command palette all come from these tables, nothing else.
What read-only mode cannot do is never offered (`offered`), and refused with a
"read-only: ..." note when reached anyway. Actions (in `tui.screens.actions`)
never call the engine directly: they ask the app, which runs it in workers.
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

import themes
from engine.api import HandoffError
from tui.attention import drift
from tui.cmdline import CommandInput, CommandSuggester, install_actions
from tui.messages import Snapshot
from tui.screens.actions import MUTATING, MainActions
from tui.text import clean_line
from tui.timefmt import ago, parse_ts
from tui.widgets.banners import Banners, broken_text
from tui.widgets.cursor_line import CursorLine
from tui.widgets.header import HeaderBar, HeaderInfo
from tui.widgets.invariants import InvariantsPanel, summary
from tui.widgets.keybar import KeyBar
from tui.widgets.log_pane import LogPane, LogTail
from tui.widgets.note_panel import SHORT, NotePanel
from tui.widgets.summary import SummaryBar
from tui.widgets.table_view import SORTS
from tui.widgets.target_table import TargetTable

if TYPE_CHECKING:
    from engine.api import Ledger
    from tui.app import HandoffApp

NARROW = 100  # below this many columns the side pane folds away (toggle with l)
STALE_TICK = 1.0  # seconds between repaints of "the state shown is Ns old" while the file is broken


class MainScreen(MainActions, Screen[None]):
    """The operator's view of one ledger.

    | Key | Action | What it does |
    |---|---|---|
    | a | approve | Approve the selected target's awaiting step |
    | slash | filter | Filter the table |
    | colon | command_line | Command line (:approve, :filter, :sort, :theme, :q) |
    | l | toggle_side | Show / hide the log and invariants |
    | question_mark | help | All keys |
    | q | quit | Quit |
    | x | reject | Reject it, with a reason |
    | e | edit_note | Edit the handoff note |
    | p | pause | Pause the ledger, with a reason |
    | p | unpause | Unpause the ledger (asks first) |
    | U | unapprove | Withdraw an unused approval on the selected target |
    | n | toggle_note | Show / hide the handoff note |
    | N | ack_note | Acknowledge the handoff note |
    | r | retry | Retry a failed target |
    | b | block | Block the selected target, with a reason |
    | u | unblock | Unblock the selected target, with a reason |
    | s | start_session | Start `handoff resume`, detached |
    | S | request_stop | Ask the session to stop after its current step |
    | o | sort | Cycle the sort order |
    | F | toggle_follow | Follow the log / scroll back |
    | R | reload | Re-read ledger and journal |
    | t | cycle_theme | Next theme |
    | y | copy_name | Copy the selected target's name |
    | Y | copy_command | Copy its pending command |
    | escape | clear_filter | Clear the filter |
    | enter | submit_box | In the filter or the command line: keep it / run it |
    """

    BINDINGS = [
        # In footer order: what does not fit at 80 columns drops from the end (help and quit stay).
        Binding("a", "approve", "Approve", id="main.approve",
                tooltip="Approve the selected target's awaiting step: shows the exact command first"),
        # Priority, and the focus moves at once: "/db-18" typed in one burst (a paste, a
        # laggy SSH link) must filter, not run `b` (block) on the table. While a text box
        # has the focus, `check_action` lets the key through to it, in order.
        Binding("slash", "filter", "Filter", id="main.filter", key_display="/", priority=True,
                tooltip="Filter: regex words, state:failed, !negated, a|b, is:attention; shows the match count"),
        Binding("colon", "command_line", "Command", id="main.command_line", key_display=":", priority=True,
                tooltip="Command line: :approve NAME, :filter TEXT, :sort KEY, :theme, :NAME, :q"),
        Binding("l", "toggle_side", "Log", id="main.toggle_side", tooltip="Show or hide the session log and invariants pane"),
        Binding("question_mark", "help", "Help", id="main.help", key_display="?", tooltip="Every key and command"),
        Binding("q", "quit", "Quit", id="main.quit", tooltip="Quit handoff-tui (a running session keeps running; a demo ends)"),
        Binding("x", "reject", "Reject", id="main.reject", tooltip="Reject the selected target's awaiting step, with a reason (blocks it)"),
        Binding("e", "edit_note", "Edit note", id="main.edit_note", tooltip="Edit the handoff note (detects edits made underneath)"),
        Binding("p", "pause", "Pause", id="main.pause", tooltip="Pause the ledger, with a reason: sessions stop before their next step"),
        Binding("p", "unpause", "Unpause", id="main.unpause", tooltip="Unpause the ledger (asks first)"),
        Binding("U", "unapprove", "Unapprove", id="main.unapprove", show=False,
                tooltip="Withdraw the selected target's unused approval (the next session asks again)"),
        Binding("n", "toggle_note", "Note", id="main.toggle_note", show=False, tooltip="Show or hide the handoff note panel"),
        Binding("N", "ack_note", "Ack note", id="main.ack_note", show=False,
                tooltip="Acknowledge the handoff note as the incoming operator (journaled)"),
        Binding("r", "retry", "Retry", id="main.retry", show=False,
                tooltip="Retry the selected failed target (asks first in production)"),
        Binding("b", "block", "Block", id="main.block", show=False, tooltip="Block the selected target, with a reason"),
        Binding("u", "unblock", "Unblock", id="main.unblock", show=False,
                tooltip="Unblock the selected target into a chosen state, with a reason"),
        Binding("s", "start_session", "Start session", id="main.start_session", show=False,
                tooltip="Start an agent session (handoff resume) as its own detached process"),
        Binding("S", "request_stop", "Stop session", id="main.request_stop", show=False,
                tooltip="Ask the running session to stop after its current step"),
        Binding("o", "sort", "Sort", id="main.sort", show=False, tooltip="Cycle the sort: ledger order, state, name, age"),
        Binding("F", "toggle_follow", "Follow log", id="main.toggle_follow", show=False,
                tooltip="Follow the end of the session log, or stop following to scroll back"),
        Binding("R", "reload", "Reload", id="main.reload", show=False, tooltip="Re-read the ledger and the journal now"),
        Binding("t", "cycle_theme", "Theme", id="main.cycle_theme", show=False,
                tooltip="Switch to the next theme (dark, light, high contrast)"),
        Binding("y", "copy_name", "Copy name", id="main.copy_name", show=False,
                tooltip="Copy the selected target's name to the clipboard (OSC 52, works over SSH)"),
        Binding("Y", "copy_command", "Copy command", id="main.copy_command", show=False,
                tooltip="Copy the command that would run next on the selected target (OSC 52)"),
        # Priority, like "/": Esc and Enter in the filter or the command line move the focus back to
        # the table before the next key is read, so "q" or "a" typed right behind is a key, not text.
        Binding("escape", "clear_filter", "Clear filter", id="main.clear_filter", show=False, priority=True,
                tooltip="Clear the filter, or close the command line"),
        Binding("enter", "submit_box", "Done", id="main.submit_box", show=False, priority=True,
                tooltip="Keep the filter, or run the command line"),
    ]

    app: HandoffApp

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
                    id="cmdline", suggester=CommandSuggester(lambda: self.app.read_only, self.command_words))
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
        self.query_one(SummaryBar).show(ledger, missing=len(snapshot.missing))
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
        self.query_one(Banners).show_broken(broken_text(str(self.broken), age, revision))
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
            stale=f"file does not parse; showing the state of {self._stale_age()} ago" if self.broken else None,
            invariants=summary(invariants, len(ledger.invariants)),
            awaiting=sum(1 for t in ledger.targets.values() if t.state == "awaiting_approval"),
            drifted=sum(1 for t in ledger.targets.values() if drift(t) is not None),
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
        return True

    def offered(self, action: str) -> bool:
        """Whether footer, help and palette offer `action` now: never what read-only mode cannot do."""
        return not (action in MUTATING and self.app.read_only)

    def visible_actions(self) -> list[tuple[Binding, str]]:
        """(binding, help) for every action offered now, table keys included: the source of help and palette."""
        seen: set[str] = set()
        out: list[tuple[Binding, str]] = []
        for binding in [*TargetTable.BINDINGS, *self.BINDINGS]:
            assert isinstance(binding, Binding)
            if binding.action in seen or not self.offered(binding.action):
                continue
            if binding.action == "submit_box":
                continue  # Enter inside a box, not a key of its own
            if self.check_action(binding.action, ()) is not True and binding.action not in ("filter", "command_line"):
                continue
            seen.add(binding.action)
            out.append((binding, binding.tooltip or binding.description))
        return out

    def command_words(self, command: str) -> list[str]:
        """What may follow `:command` (for completion)."""
        # Only names that are plain text: a suggestion is drawn in the box as it is.
        names = [n for n in self.table.visible_names() if clean_line(n) == n]
        if command in ("approve", "reject"):
            return [n for n in names if self.ledger and n in self.ledger.targets
                    and self.ledger.targets[n].state == "awaiting_approval"]
        if command in ("goto", *TARGETED):
            return names
        if command == "sort":
            return list(SORTS)
        if command == "theme":
            return list(themes.THEME_NAMES)
        if command == "filter":
            return [f"state:{s}" for s in (self.ledger.states() if self.ledger else ())]
        return []

    def add_journal(self, records: list[dict[str, Any]]) -> None:
        """New journal lines for the log pane (and the two-line tail under the table)."""
        if self._defer(self.add_journal, records):
            return
        self.query_one(LogPane).add_records(records)
        self.query_one(LogTail).add_records(records)

    def mark_acknowledged(self) -> None:
        self.note_acknowledged = True
        self._show_note()

    def header_text(self) -> str:
        """The header as plain text (tests and e2e read it)."""
        header = self.query_one(HeaderBar)
        return "\n".join(line.plain for line in header.lines(header.size.width or 80))


# Keys that only work a text box; every other key of the main screen is a `:` command too.
_NOT_COMMANDS = frozenset({"filter", "command_line", "submit_box", "clear_filter"})
# Actions that act on a target: `:retry web-03` moves the cursor there first.
TARGETED = frozenset({"unapprove", "retry", "block", "unblock", "copy_name", "copy_command"})
install_actions([b for b in MainScreen.BINDINGS if isinstance(b, Binding) and b.action not in _NOT_COMMANDS],
                MUTATING, TARGETED)

__all__ = ["MainScreen", "MUTATING"]
