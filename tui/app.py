"""The handoff-tui application: wiring between the engine (through `Controller`) and the screens.

`make_app()` is the one factory the CLI, the tests and the benchmarks use. It
opens the ledger through the engine (so an invalid file fails before any screen
opens) and returns a `HandoffApp`. All blocking engine work runs in named
workers; results come back as Messages; every worker error ends in
`show_error`, one error view, so no failure vanishes silently.

Every read of the file is numbered; the screen only ever moves forward, so a
slow worker's older reading can never replace a newer one (a broken file stays
broken on screen until a read parses again). The lease poll re-reads the file
too: what it shows is always what the file says now.
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import threading
import time
import traceback
from typing import Any

from textual import work
from textual.actions import ActionParseResult
from textual.app import App, SystemCommand
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

import themes
from engine.api import HandoffError, LedgerInvalid, UsageError, hangups_ignored, setting_seconds, started
from tui.chain import ChainCheck
from tui.commands import ActionsProvider
from tui.controller import Controller, open_handle
from tui.demo import DemoRun, running_steps
from tui.endings import CHECK_EVERY, hung_up, server_fd, terminal_driver, terminal_fd
from tui.messages import Draft, JournalRecords, LedgerBroken, Snapshot, SnapshotReady
from tui.mutations import Mutations
from tui.screens.action_table import ACTIONS
from tui.screens.approve import ApproveScreen
from tui.screens.approve_batch import BatchApproveScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.detail import DetailScreen, HistoryLoaded
from tui.screens.error import ErrorScreen
from tui.screens.main import MainScreen
from tui.since import changes, remember
from tui.text import clean
from tui.timefmt import Clock, utcnow
from tui.viewer import ServedView

JOURNAL_BACKLOG = 200   # journal lines shown on open; older ones are in `handoff journal`
JOURNAL_POLL = 0.25     # seconds between journal reads while watching
LEASE_POLL = 2.0        # seconds between re-reads for the lease/heartbeat while watching
WATCH_SETTLE = 0.5      # seconds after starting the watch before one catch-up re-read


class HandoffApp(Mutations, ChainCheck, App[None]):
    """The operator screen over one ledger.

    | Key | Action | What it does |
    |---|---|---|

    The app adds no keys of its own (Textual's ctrl+p palette and ctrl+q quit
    stay); the main screen's key table is in `tui.screens.main.MainScreen`.
    """

    CSS_PATH = str(themes.TCSS_PATH)
    TITLE = "handoff-tui"
    COMMANDS = App.COMMANDS | {ActionsProvider}
    BINDINGS = []

    def __init__(self, controller: Controller, initial: Snapshot, *, clock: Clock | None = None,
                 watch: bool = True, theme: str | None = None, bell: bool = True, served: ServedView | None = None,
                 seen_after: float = 0.0) -> None:
        super().__init__()
        for theme_obj in themes.THEMES:
            self.register_theme(theme_obj)
        self.theme = theme or themes.DEFAULT_THEME
        self.controller = controller
        self.clock: Clock = clock or utcnow
        self.watching = watch
        self.initial = initial
        self.bell_on = bell
        self.bells = 0  # how many times the bell rang (the terminal's bell leaves no other trace)
        self.demo: DemoRun | None = None
        self.main: MainScreen | None = None
        self._reads = itertools.count(1)  # numbers every read of the file, in the order they start
        self._shown_seq = 0
        self._awaiting: set[str] | None = None
        self._journal_offset = 0
        self._journal_lock = threading.Lock()
        self._user_state_saved = False
        # Served to a browser (tui.serve): whose mark, what the link asked for, and how long a tab
        # must be open before it counts as a look (a glance at a wrong link moves no mark).
        self.served = served
        self.seen_after = seen_after
        self._looked = False  # a served tab has shown its "since" for seen_after seconds
        self._since_at: float | None = None  # when it was shown (the look is counted from then)
        # Words a refused request or an escaped note conflict left unsaved, by (verb, target): tui.mutations.
        self.drafts: dict[tuple[str, str | None], Draft] = {}
        self.ended_by: int | None = None  # the signal that ended the screen (tui.endings), if one did

    # -- mode and look ------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self.controller.read_only

    @property
    def read_only_reason(self) -> str | None:
        return self.controller.read_only_reason or ("--read-only" if self.read_only else None)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Our semantic variables for any theme, so the TCSS parses under Textual's built-in themes too.
        return {**super().get_theme_variable_defaults(), **themes.theme_defaults(self.current_theme)}

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast, whoever built it: control characters in it (a target's name, a state, an
        engine's message) made visible, and never read as markup: ledger text is data."""
        super().notify(clean(message), title=clean(title), severity=severity, timeout=timeout, markup=False)

    def set_theme(self, name: str | None) -> None:
        """Switch to theme `name`, or the next of ours."""
        if name is not None and name not in themes.THEME_NAMES:
            self.notify(f"no theme {name!r}; choose one of: {', '.join(themes.THEME_NAMES)}", severity="warning", markup=False)
            return
        self.theme = name or themes.next_theme(self.theme)
        self.notify(f"Theme: {self.theme}", timeout=2, markup=False)

    def get_system_commands(self, screen: Screen) -> Any:
        # Our palette has its own Theme, Quit and Help entries (from the bindings); one of each.
        for command in super().get_system_commands(screen):
            if isinstance(command, SystemCommand) and command.title in ("Theme", "Quit", "Keys"):
                continue
            yield command

    async def run_action(self, action: str | ActionParseResult, default_namespace: DOMNode | None = None,
                         namespaces: Any = None) -> bool:
        """A key bound on the main screen runs its row of the action table through the screen's
        one door (`MainScreen.perform`), not a method found by name; every other action is Textual's."""
        row = ACTIONS.by_name.get(action) if isinstance(action, str) else None
        if row is not None and isinstance(default_namespace, MainScreen):
            if default_namespace.check_action(row.name, ()) is not True:
                return False  # not now (a text box has the focus, the ledger is not paused, ...): the key goes on
            default_namespace.perform(row)
            return True
        return await super().run_action(action, default_namespace, namespaces)

    # -- start and stop ----------------------------------------------------------

    def get_default_screen(self) -> MainScreen:
        # The reading make_app took paints the first frame at once; invariants, lease
        # and "since you last looked" follow from a worker.
        self.main = MainScreen(self.initial)
        return self.main

    def get_driver_class(self) -> type:
        """Textual's driver for this terminal, whose writes into a terminal that has gone are
        dropped rather than hanging the screen (tui.endings)."""
        return terminal_driver(super().get_driver_class())

    def on_mount(self) -> None:
        # After the first frame: these workers (invariants over every target, the
        # journal, the watch) would otherwise compete with the first paint for the GIL.
        self.call_after_refresh(self._start_workers)
        if not (self.is_headless or self.is_web):  # a browser's session has its own (textual-serve)
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._ended, signal.SIGTERM)

    def _ended(self, signum: int | None) -> None:
        """Quit without questions (tui.endings); tui.main then dies of `signum`, if one is given."""
        self.ended_by = signum
        self.exit()

    def _looked_long_enough(self) -> None:
        self._looked = True
        self.save_user_state(final=False)

    @property
    def keeps_marks(self) -> bool:
        """Whether this process reads and writes a "since you last looked" mark: always in a
        terminal; when served, only for a viewer it can tell apart from others."""
        return self.served is None or self.served.viewer is not None

    def _start_workers(self) -> None:
        if not self.is_running:
            # Stopped before its first frame's callbacks ran (a quit, a SIGTERM, a browser viewer's
            # server stopping it at once): Textual has already cancelled its workers, and a journal
            # follower started now would never be, holding the process open after the screen ended.
            return
        started()  # the first frame is up: the collector back on (off since tui.main; engine.store.bulk)
        if self.served is not None and self.main is not None and (self.served.target or self.served.filter):
            # After the screen's own opening moves (the cursor on what needs a person).
            self.main.call_after_refresh(self.main.open_link, self.served.target, self.served.filter)
        self.open_snapshot(self.initial, next(self._reads))
        self.tail_journal(follow=self.watching)
        self.start_chain_checks()
        self.watch_terminal()
        if self.watching:
            self.watch_ledger()
            # The watch compares against the file as it finds it when it starts; a write
            # between make_app's load and that moment would go unseen. Re-read once it is armed.
            self.set_timer(WATCH_SETTLE, self.reload)
            self.set_interval(LEASE_POLL, self.reload)

    def watch_terminal(self) -> None:
        """Once a second: has the terminal hung up without sending SIGHUP? Then end as by a
        hang-up. A browser viewer's: has its server gone? Then quit (tui.endings). Not for
        a headless test app."""
        fd = None if self.is_headless else server_fd() if self.is_web else terminal_fd()
        if fd is None:
            return

        def look() -> None:
            if hung_up(fd):
                self._ended(None if self.is_web or hangups_ignored() else signal.SIGHUP)
        self.set_interval(CHECK_EVERY, look)

    async def action_quit(self) -> None:
        """Quit; leaving the demo ends it, and asks first while one of its steps runs."""
        steps = running_steps(self.main.ledger if self.main else None) if self.demo and self.demo.alive() else []
        if steps:
            def answered(yes: bool | None) -> None:
                if yes:
                    self.save_user_state()
                    self.exit()

            self.push_screen(ConfirmScreen(
                "End the demo and quit?",
                f"A step is running: {', '.join(steps)}. Quitting ends the demo: its session finishes that "
                "step, hands off and stops.", yes="End the demo", no="Stay", danger=True), answered)
            return
        self.save_user_state()
        self.exit()

    def on_unmount(self) -> None:
        self.save_user_state()

    def save_user_state(self, *, final: bool = True) -> None:
        """Remember what this user saw, for the next "since you last looked": the reading on
        screen, stamped with when it was read, so a tab showing an older reading never moves
        the mark back (`Controller.save_user_state`). A served tab that has not shown its
        "since" for `seen_after` seconds saves nothing; `final` is the last save (on quit)."""
        if self._user_state_saved or self.main is None or self.main.ledger is None or not self.keeps_marks:
            return
        if self.served is not None and not self._looked and (
                self._since_at is None or time.monotonic() - self._since_at < self.seen_after):
            return
        if final:
            self._user_state_saved = True
        try:
            self.controller.save_user_state(remember(self.main.ledger, self.main.good_at or self.clock()))
        except (OSError, HandoffError, ImportError) as error:
            # Losing the digest is not worth blocking quit over; the log says why.
            self.log.warning(f"could not save per-user state: {error!r}")

    # -- workers: reading ---------------------------------------------------------

    # A description of our own: Textual's default is the call's repr, and the repr of a
    # 10,000-target reading took a quarter of a second before the first paint.
    @work(thread=True, exclusive=True, exit_on_error=False, group="open", description="open the first reading")
    def open_snapshot(self, initial: Snapshot, seq: int) -> None:
        """Invariants and lease for the first reading, plus this user's previous visit."""
        snapshot = self.controller.snapshot(_StoreView(initial), seq=seq)
        try:
            previous = self.controller.load_user_state() if self.keeps_marks else {}
        except (OSError, ValueError, ImportError) as error:
            self.log.warning(f"no per-user state: {error!r}")
            previous = {}
        self.post_message(SnapshotReady(snapshot))
        self.call_from_thread(self._show_since, changes(previous, initial.ledger))

    def _show_since(self, lines: list[str]) -> None:
        """What changed since this viewer's mark, on screen; a served tab's look is counted
        from now. Counted from the mount, a loaded machine let the look's save advance the
        mark before the previous one was read: the viewer was never shown what changed."""
        if self.main is not None and lines:
            self.main.show_since(lines)
        self._since_at = time.monotonic()
        if self.served is not None and self.keeps_marks:
            self.set_timer(self.seen_after, self._looked_long_enough)

    @work(thread=True, exclusive=True, exit_on_error=False, group="snapshot", description="read the ledger again")
    def refresh_snapshot(self, seq: int, store_snap: Any = None) -> None:
        """Read (unless given the engine's reading) and derive; a file that does not parse is a banner."""
        try:
            snapshot = self.controller.snapshot(store_snap, seq=seq)
        except LedgerInvalid as error:
            self.post_message(LedgerBroken(error, seq))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(SnapshotReady(snapshot))

    @work(exclusive=True, exit_on_error=False, group="watch")
    async def watch_ledger(self) -> None:
        """The engine's watch on the parent folder: new readings, or parse errors."""
        async for event in self.controller.watch():
            seq = next(self._reads)
            error = getattr(event, "error", None)
            if error is not None:
                self.post_message(LedgerBroken(error, seq))
            else:
                self.refresh_snapshot(seq, event.snapshot)

    def _read_journal(self) -> list[dict[str, Any]]:
        # One reader at a time: the offset must never be read twice.
        with self._journal_lock:
            records, self._journal_offset = self.controller.journal_read(self._journal_offset)
        return records

    @work(thread=True, exclusive=True, exit_on_error=False, group="journal")
    def tail_journal(self, follow: bool) -> None:
        """Show the journal's last records, then follow it from where it ended.

        Never reads the whole journal: a long rollout's journal can be large. The end
        offset is taken first, so a record written in between is read twice, not lost;
        the first follow read drops what the backlog already showed.
        """
        worker = get_current_worker()
        with self._journal_lock:
            self._journal_offset = self.controller.journal_end_offset()
            backlog = self.controller.journal_tail(JOURNAL_BACKLOG)
        self.post_message(JournalRecords(backlog))
        shown = backlog[-50:]
        stop = threading.Event()
        while not worker.is_cancelled:
            if follow:
                stop.wait(JOURNAL_POLL)
            records = self._read_journal()
            if shown:
                records = [r for r in records if r not in shown]
                shown = []
            if records:
                self.post_message(JournalRecords(records))
            if not follow:
                break

    @work(thread=True, exit_on_error=False, group="journal-once")
    def read_journal_once(self) -> None:
        records = self._read_journal()
        if records:
            self.post_message(JournalRecords(records))

    @work(thread=True, exclusive=True, exit_on_error=False, group="history", description="read a target's history")
    def load_history(self, name: str, screen: Any) -> None:
        screen.post_message(HistoryLoaded(self.controller.history(name), self.controller.until_progress(name)))

    def reload(self) -> None:
        """Re-read ledger and journal now (after an action, on R, and every LEASE_POLL)."""
        self.refresh_snapshot(next(self._reads))
        if not self.watching:
            self.read_journal_once()

    # -- messages from workers -------------------------------------------------------

    def _showing(self) -> bool:
        """Whether the main screen is there to paint (not before it exists, nor after it is gone)."""
        return self.main is not None and self.main.is_attached

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        snapshot = message.snapshot
        if not self._showing() or snapshot.seq < self._shown_seq:
            return  # gone, or an older reading than the one on screen
        self._shown_seq = snapshot.seq
        self.drop_gone_drafts(snapshot.ledger)
        self._ring_for_new_approvals(snapshot)
        try:
            self.main.show_snapshot(snapshot)
            for screen in self.screen_stack:
                self._follow(screen, snapshot)
        except NoMatches:
            # A worker's reading arrived while the app was taking its screens down on quit.
            self.log.warning("a ledger reading arrived after the screen was gone")

    def _follow(self, screen: Screen, snapshot: Snapshot) -> None:
        """Dialogs and the detail view follow the live ledger too."""
        ledger = snapshot.ledger
        if isinstance(screen, ApproveScreen):
            screen.follow(ledger, snapshot.invariants)
        elif isinstance(screen, BatchApproveScreen):
            screen.follow(ledger)
        elif isinstance(screen, DetailScreen) and self.main is not None and screen.target_name in ledger.targets:
            pending, problem = self.main.next_command_of(screen.target_name)
            screen.follow(ledger.targets[screen.target_name], self.main.header_info(), pending, problem)

    def _ring_for_new_approvals(self, snapshot: Snapshot) -> None:
        awaiting = {n for n, t in snapshot.ledger.targets.items() if t.state == "awaiting_approval"}
        new = awaiting - self._awaiting if self._awaiting is not None else set()
        self._awaiting = awaiting
        if new and self.bell_on:
            self.bells += 1
            self.bell()  # once per reading, however many started waiting

    def on_ledger_broken(self, message: LedgerBroken) -> None:
        if not self._showing() or message.seq < self._shown_seq:
            return
        self._shown_seq = message.seq
        self.main.show_broken(message.error)

    def on_journal_records(self, message: JournalRecords) -> None:
        if self._showing() and message.records:
            try:
                self.main.add_journal(message.records)
            except NoMatches:
                self.log.warning("journal lines arrived after the screen was gone")
        if not self.screen_stack:
            return  # the app is stopping, its screens already gone: the follower's last post is dropped
        if isinstance(self.screen, DetailScreen) and message.records:
            self.screen.add_records(message.records)  # an `until` step's readings, as they come

    # -- the one error handler ---------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.show_error(event.worker.error)

    def show_error(self, error: BaseException) -> None:
        """Show any error: engine errors by title and message, anything else with its type."""
        if isinstance(error, HandoffError):
            title, message = error.title, str(error)
        else:
            # A bug, not a user's mistake: say so, and keep the traceback in the log.
            title = "Unexpected error"
            message = f"{type(error).__name__}: {error}\n\nThe ledger was not changed by the TUI. Please report this."
            self.log.error("".join(traceback.format_exception(error)))
        self.push_screen(ErrorScreen(title, message))


class _StoreView:
    """The first reading as the engine's Snapshot shape (ledger, missing, rollback, warnings)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.ledger, self.missing = snapshot.ledger, snapshot.missing
        self.rollback, self.warnings = snapshot.rollback, snapshot.warnings


def make_app(
    location: str,
    *,
    read_only: bool = False,
    actor: str | None = None,
    theme: str | None = None,
    clock: Clock | None = None,
    watch: bool = True,
    bell: bool = True,
    served: ServedView | None = None,
) -> HandoffApp:
    """Open `location` through the engine and build the app (the CLI and tests share this).

    Raises `engine.errors.LedgerInvalid` for a missing or invalid ledger and
    `UsageError` for an unknown theme, before any screen exists. `served` is set for a
    browser viewer's process (`tui.viewer.from_environ`): their own mark, and their link.
    """
    if theme is not None and theme not in themes.THEME_NAMES:
        from textual.theme import BUILTIN_THEMES

        if theme not in BUILTIN_THEMES:
            raise UsageError(f"unknown theme {theme!r}; choose one of: {', '.join(themes.THEME_NAMES)}")
    handle = open_handle(location, actor=actor, read_only=read_only)
    read = handle.snapshot()
    initial = Snapshot(read.ledger, missing=list(read.missing), rollback=list(getattr(read, "rollback", [])),
                       warnings=list(read.warnings))
    seen_after = setting_seconds("HANDOFF_SERVE_SEEN_AFTER") if served is not None else 0.0
    return HandoffApp(Controller(handle, viewer=served.viewer if served else None), initial, clock=clock, watch=watch,
                      theme=theme, bell=bell, served=served, seen_after=seen_after)


__all__ = ["HandoffApp", "make_app", "Snapshot"]
