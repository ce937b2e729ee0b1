"""The handoff-tui application: wiring between the engine (through `Controller`) and the screens.

`make_app()` is the one factory the CLI, the tests and the benchmarks use. It
opens the ledger through the engine (so an invalid file fails before any screen
opens) and returns a `HandoffApp`. All blocking engine work runs in named
workers; results come back as Messages; every worker error ends in
`show_error`, one error view, so no failure vanishes silently.
"""

from __future__ import annotations

import threading
import traceback
from typing import Any

from textual import work
from textual.app import App
from textual.worker import Worker, WorkerState, get_current_worker

import themes
from engine.errors import Conflict, HandoffError, LedgerInvalid, ReadOnly, Refused, UsageError
from tui.commands import ActionsProvider
from tui.controller import Controller, open_handle
from tui.messages import ActionDone, JournalRecords, LedgerBroken, NoteConflict, RetryRefused, Snapshot, SnapshotReady
from tui.screens.detail import HistoryLoaded
from tui.screens.error import ErrorScreen
from tui.screens.main import MainScreen
from tui.screens.note_editor import NoteConflictScreen, NoteEditor, merged
from tui.screens.reason import Reason, ReasonPrompt
from tui.since import changes, remember
from tui.timefmt import Clock, utcnow

JOURNAL_BACKLOG = 200   # journal lines shown on open; older ones are in `handoff journal`
JOURNAL_POLL = 0.25     # seconds between journal reads while watching
LEASE_POLL = 2.0        # seconds between lease/heartbeat refreshes while watching
WATCH_SETTLE = 0.5      # seconds after starting the watch before one catch-up re-read


class HandoffApp(App[None]):
    """The operator screen over one ledger.

    | Key | Action | What it does |
    |---|---|---|
    | ctrl+p | command_palette | Every action by name |
    | ctrl+q | quit | Quit |

    The main screen's own key table is in `tui.screens.main.MainScreen`.
    """

    CSS_PATH = str(themes.TCSS_PATH)
    TITLE = "handoff-tui"
    COMMANDS = App.COMMANDS | {ActionsProvider}
    BINDINGS = []

    def __init__(
        self,
        controller: Controller,
        ledger: Any,
        *,
        clock: Clock | None = None,
        watch: bool = True,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        for theme_obj in themes.THEMES:
            self.register_theme(theme_obj)
        self.theme = theme or themes.DEFAULT_THEME
        self.controller = controller
        self.clock: Clock = clock or utcnow
        self.watching = watch
        self.initial_ledger = ledger
        self.main: MainScreen | None = None
        self._journal_offset = 0
        self._journal_lock = threading.Lock()
        self._user_state_saved = False
        self._pending_note_base: str | None = None

    # -- mode --------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self.controller.read_only

    @property
    def read_only_reason(self) -> str | None:
        return self.controller.read_only_reason or ("--read-only" if self.read_only else None)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Our semantic variables for any theme, so the TCSS parses under Textual's built-in themes too.
        return {**super().get_theme_variable_defaults(), **themes.theme_defaults(self.current_theme)}

    def cycle_theme(self) -> None:
        self.theme = themes.next_theme(self.theme)
        self.notify(f"Theme: {self.theme}", timeout=2, markup=False)

    # -- start and stop ----------------------------------------------------------

    def get_default_screen(self) -> MainScreen:
        # The ledger make_app loaded paints the first frame at once; invariants,
        # lease and "since you last looked" follow from a worker.
        self.main = MainScreen(self.initial_ledger)
        return self.main

    def on_mount(self) -> None:
        # After the first frame: these workers (invariants over every target, the
        # journal, the watch) would otherwise compete with the first paint for the GIL.
        self.call_after_refresh(self._start_workers)

    def _start_workers(self) -> None:
        self.open_snapshot(self.initial_ledger)
        self.tail_journal(follow=self.watching)
        if self.watching:
            self.watch_ledger()
            # The watch compares against the file as it finds it when it starts; a write
            # between make_app's load and that moment would go unseen. Re-read once it is armed.
            self.set_timer(WATCH_SETTLE, self.refresh_snapshot)
            self.set_interval(LEASE_POLL, self._poll_lease)

    async def action_quit(self) -> None:
        self.save_user_state()
        self.exit()

    def on_unmount(self) -> None:
        self.save_user_state()

    def save_user_state(self) -> None:
        """Remember what this user saw, for the next "since you last looked"."""
        if self._user_state_saved or self.main is None or self.main.ledger is None:
            return
        self._user_state_saved = True
        try:
            self.controller.save_user_state(remember(self.main.ledger, self.clock()))
        except (OSError, HandoffError, ImportError) as error:
            # Losing the digest is not worth blocking quit over; the log says why.
            self.log.warning(f"could not save per-user state: {error!r}")

    # -- workers: reading ---------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="open")
    def open_snapshot(self, ledger: Any) -> None:
        """First snapshot plus this user's previous visit."""
        snapshot = self.controller.snapshot(ledger)
        try:
            previous = self.controller.load_user_state()
        except (OSError, ValueError, ImportError) as error:
            self.log.warning(f"no per-user state: {error!r}")
            previous = {}
        self.post_message(SnapshotReady(snapshot))
        lines = changes(previous, ledger)
        if lines:
            self.call_from_thread(self._show_since, lines)

    def _show_since(self, lines: list[str]) -> None:
        if self.main is not None:
            self.main.show_since(lines)

    @work(thread=True, exclusive=True, exit_on_error=False, group="snapshot")
    def refresh_snapshot(self, ledger: Any = None) -> None:
        """Load (unless given) and derive; an unparsable file becomes a banner, not an error."""
        try:
            snapshot = self.controller.snapshot(ledger)
        except LedgerInvalid as error:
            self.post_message(LedgerBroken(error))
            return
        self.post_message(SnapshotReady(snapshot))

    def _poll_lease(self) -> None:
        if self.main is not None and self.main.ledger is not None:
            self.refresh_snapshot(self.main.ledger)

    @work(exclusive=True, exit_on_error=False, group="watch")
    async def watch_ledger(self) -> None:
        """The engine's watch on the parent folder: new ledgers, or parse errors."""
        async for event in self.controller.watch():
            error = getattr(event, "error", None)
            if error is not None:
                self.post_message(LedgerBroken(error))
            else:
                self.refresh_snapshot(event.ledger)

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

    @work(thread=True, exclusive=True, exit_on_error=False, group="history")
    def load_history(self, name: str, screen: Any) -> None:
        screen.post_message(HistoryLoaded(self.controller.history(name)))

    def reload(self) -> None:
        """Re-read ledger and journal now (after an action, or on R)."""
        self.refresh_snapshot()
        if not self.watching:
            self.read_journal_once()

    # -- workers: changing ----------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="mutate")
    def mutate(self, op: str, *args: Any, **kwargs: Any) -> None:
        """Run one engine mutation. Not exclusive: an operator's action is never cancelled by the next."""
        if self.read_only:
            raise ReadOnly(f"{op.replace('_', ' ')} refused: this view is read-only ({self.read_only_reason}).")
        try:
            text = getattr(self.controller, op)(*args, **kwargs)
        except Conflict as error:
            if op == "set_note":
                self.post_message(NoteConflict(args[0], str(error.theirs or "")))
                return
            raise
        except Refused as error:
            if op == "retry" and not kwargs.get("force") and not isinstance(error, ReadOnly):
                self.post_message(RetryRefused(args[0], error))
                return
            raise
        self.post_message(ActionDone(text))
        if op == "ack_note":
            self.call_from_thread(self._acknowledged)
        self.call_from_thread(self.reload)

    def _acknowledged(self) -> None:
        if self.main is not None:
            self.main.mark_acknowledged()

    def edit_note(self, text: str, *, base: str) -> None:
        """Open the note editor; save with `base` so an edit made underneath is detected."""

        def done(new_text: str | None) -> None:
            # Saving the unchanged base would only bump the revision; skip it.
            if new_text is not None and new_text != base:
                self.mutate("set_note", new_text, base)

        self.push_screen(NoteEditor(text), done)

    # -- messages from workers -------------------------------------------------------

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        if self.main is None:
            return
        shown = self.main.ledger
        if shown is not None and message.snapshot.ledger.revision < shown.revision:
            return  # a slower worker's older ledger (the first snapshot after a catch-up re-read)
        self.main.show_snapshot(message.snapshot)

    def on_ledger_broken(self, message: LedgerBroken) -> None:
        if self.main is not None:
            self.main.show_broken(message.error)

    def on_journal_records(self, message: JournalRecords) -> None:
        if self.main is not None and message.records:
            self.main.add_journal(message.records)

    def on_action_done(self, message: ActionDone) -> None:
        self.notify(message.text, timeout=3, markup=False)

    def on_note_conflict(self, message: NoteConflict) -> None:
        mine, theirs = message.mine, message.theirs

        def chosen(choice: str | None) -> None:
            if choice == "mine":
                self.mutate("set_note", mine, theirs)
            elif choice == "merge":
                self.edit_note(merged(mine, theirs), base=theirs)
            else:
                self.notify("Kept their note; your edit was not saved.", markup=False)
                self.reload()

        self.push_screen(NoteConflictScreen(mine, theirs), chosen)

    def on_retry_refused(self, message: RetryRefused) -> None:
        name = message.target

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.mutate("retry", name, force=True, reason=reason.text)

        self.push_screen(ReasonPrompt(
            f"Force retry of {name}?",
            f"{message.error.message}\n\nThe failed step may have half-happened. Forcing runs it again; "
            "say why (this goes to the journal).",
            ok_label="Force retry", danger=True), done)

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


def make_app(
    location: str,
    *,
    read_only: bool = False,
    actor: str | None = None,
    theme: str | None = None,
    clock: Clock | None = None,
    watch: bool = True,
) -> HandoffApp:
    """Open `location` through the engine and build the app (the CLI and tests share this).

    Raises `engine.errors.LedgerInvalid` for a missing or invalid ledger and
    `UsageError` for an unknown theme, before any screen exists.
    """
    if theme is not None and theme not in themes.THEME_NAMES:
        from textual.theme import BUILTIN_THEMES

        if theme not in BUILTIN_THEMES:
            raise UsageError(f"unknown theme {theme!r}; choose one of: {', '.join(themes.THEME_NAMES)}")
    handle = open_handle(location, actor=actor, read_only=read_only)
    ledger = handle.load()
    return HandoffApp(Controller(handle), ledger, clock=clock, watch=watch, theme=theme)


__all__ = ["HandoffApp", "make_app", "Snapshot"]
