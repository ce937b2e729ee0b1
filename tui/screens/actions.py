"""What the main screen's keys and `:` commands do (a mixin of `MainScreen`).

Each action that changes the ledger first refuses in read-only mode, with a
"read-only: ..." note; then it asks what it must (a reason, a typed name, a
confirmation in production) and hands the engine call to the app's mutation
worker. Nothing here writes a file.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from textual.widgets import Input

from engine.api import BASE_STATES, SUMMARY_ORDER, HandoffError
from tui.cmdline import BY_NAME, Command, CommandError, available, parse
from tui.screens.approve import ApproveResult, ApproveScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen, Section
from tui.screens.reason import Reason, ReasonPrompt
from tui.text import clean_line
from tui.widgets.header import is_dangerous
from tui.widgets.log_pane import LogPane
from tui.widgets.note_panel import SHORT, NotePanel
from tui.widgets.table_view import SORTS
from tui.widgets.target_table import TargetTable

if TYPE_CHECKING:
    from tui.app import HandoffApp

# Actions that change the ledger or start/stop a process: never offered in read-only mode.
MUTATING = frozenset({
    "approve", "unapprove", "reject", "edit_note", "ack_note", "pause", "unpause",
    "retry", "block", "unblock", "start_session", "request_stop", "accept_removal", "accept_rollback",
})

# Still offered while the file does not parse: a stop must reach a running session.
_WHILE_BROKEN = frozenset({"request_stop"})


class MainActions:
    """Action methods of the main screen; see `MainScreen` for the keys."""

    app: HandoffApp
    ledger: Any
    snapshot: Any

    # -- helpers ---------------------------------------------------------------------

    def _refused(self, action: str) -> bool:
        """True (and say so) when a mutating action is reached in read-only mode."""
        if action in MUTATING and self.app.read_only:
            self.notify(f"read-only: {action.replace('_', ' ')} is not available ({self.app.read_only_reason}).",
                        severity="warning", markup=False)
            return True
        broken = getattr(self, "broken", None)
        if action in MUTATING and action not in _WHILE_BROKEN and broken is not None:
            # Refused before any reason is asked for: the engine would refuse the change anyway,
            # and the words typed into the prompt would be lost.
            self.notify(f"{action.replace('_', ' ')}: {clean_line(str(broken))}. The file does not parse; fix it "
                        "first (nothing was asked or changed).", severity="error", markup=False)
            return True
        return False

    def _production(self) -> bool:
        return self.ledger is not None and is_dangerous(self.ledger.environment)

    def _selected(self, name: str | None = None, *, states: tuple[str, ...] = (), verb: str = "") -> str | None:
        """The target under the cursor (or `name`), if it is in one of `states` (when given)."""
        name = name if name is not None else self.table.cursor_name
        if name is None or self.ledger is None:
            self.notify("No target selected.", severity="warning", markup=False)
            return None
        target = self.ledger.targets.get(name)
        if target is None:
            self.notify(f"{clean_line(name)} is missing from the file: restore the file, or :accept-removal.",
                        severity="warning", markup=False)
            return None
        if states and target.state not in states:
            self.notify(f"{clean_line(name)} is {target.state}; only {' or '.join(states)} targets can be {verb}.",
                        severity="warning", markup=False)
            return None
        return name

    # -- approve, reject -------------------------------------------------------------

    def action_approve(self) -> None:
        self.approve_target(None)

    def approve_target(self, name: str | None) -> None:
        """Open the approval dialog for `name` (or the cursor's target); never approves by itself."""
        if self._refused("approve") or self.ledger is None:
            return
        name = self._selected(name, states=("awaiting_approval",), verb="approved")
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
                self.app.mutate("approve", name, result.step, result.comment, expect_hash=result.expect_hash)

        self.app.push_screen(ApproveScreen(name, ledger.targets[name], pending, invariants, len(ledger.invariants),
                                           environment=ledger.environment,
                                           policy=self.app.controller.approval_policy(ledger, name)), done)

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

    def action_reject(self, name: str | None = None) -> None:
        if self._refused("reject"):
            return
        name = self._selected(name, states=("awaiting_approval",), verb="rejected")
        if name is None:
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("reject", name, reason.text)

        self.app.push_screen(ReasonPrompt(f"Reject {name}", "The target will be blocked with your reason.",
                                          ok_label="Reject", danger=True), done)

    # -- the note ---------------------------------------------------------------------

    def action_edit_note(self) -> None:
        if self._refused("edit_note") or self.ledger is None:
            return
        self.app.edit_note_or_draft(self.ledger.handoff_note or "")

    def action_toggle_note(self) -> None:
        panel = self.query_one(NotePanel)
        if self.size.height < SHORT and panel.display:
            # A short screen: one line, or the whole panel.
            self.note_expanded = not self.note_expanded
            self._show_note()
            return
        panel.display = not panel.display

    def action_ack_note(self) -> None:
        if self._refused("ack_note"):
            return
        self.app.mutate("ack_note")

    # -- pause, retry, block ------------------------------------------------------------

    def action_pause(self) -> None:
        if self._refused("pause"):
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("pause", reason.text)

        where = " (environment: production)" if self._production() else ""
        self.app.push_screen(ReasonPrompt(f"Pause the ledger{where}", "Sessions stop before their next step until unpaused.",
                                          ok_label="Pause", danger=self._production()), done)

    def action_unpause(self) -> None:
        if self._refused("unpause") or self.ledger is None or self.ledger.paused is None:
            return
        paused = self.ledger.paused
        where = " (environment: production)" if self._production() else ""

        def done(yes: bool | None) -> None:
            if yes:
                self.app.mutate("unpause")

        # As deliberate as pausing: say who paused it and why, and ask.
        self.app.push_screen(ConfirmScreen(
            f"Unpause the ledger{where}?",
            f"Paused by {paused.by or 'someone'}: {paused.why or 'no reason given'}.\n{self._after_unpause()}",
            yes="Unpause", no="Stay paused", danger=self._production()), done)

    def _after_unpause(self) -> str:
        """What unpausing will really do: a pause ends sessions, so usually nothing until one is started."""
        lease = getattr(self.snapshot, "lease", None) if self.snapshot is not None else None
        if getattr(lease, "status", None) == "live":
            return "The running session goes on with its next step."
        return (f"No session is running: nothing runs until one is started (s here, or handoff resume "
                f"{self.app.controller.location}).")

    def action_retry(self) -> None:
        if self._refused("retry"):
            return
        name = self._selected(states=("failed",), verb="retried")
        if name is None:
            return
        if not self._production():
            self.app.mutate("retry", name)
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.mutate("retry", name, reason=reason.text)

        self.app.push_screen(ReasonPrompt(f"Retry {name} in production?",
                                          "It goes back to the state its failed step started from, and the next "
                                          "session runs that step again. Say why (this goes to the journal).",
                                          ok_label="Retry", danger=True), done)

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

        where = " in production" if self._production() else ""
        self.app.push_screen(ReasonPrompt(f"Unblock {name}{where}", "Choose the state it goes back to.", ok_label="Unblock",
                                          danger=self._production(), choices=states or list(BASE_STATES),
                                          choice_label="Back to state"), done)

    def action_start_session(self) -> None:
        if not self._refused("start_session"):
            self.app.mutate("start_session")

    def action_request_stop(self) -> None:
        if not self._refused("request_stop"):
            self.app.mutate("request_stop")

    def action_accept_removal(self) -> None:
        self._accept("accept_removal", "Accept that the missing targets were removed on purpose?",
                     "The same as `handoff check --accept-removal`: the engine stops treating the file as cut short. "
                     "If the file was truncated by accident, restore it instead.")

    def action_accept_rollback(self) -> None:
        self._accept("accept_rollback", "Accept the older file as the right one?",
                     "The same as `handoff check --accept-rollback`: what went backwards stays that way. "
                     "If a newer copy exists, restore it instead.")

    def _accept(self, op: str, title: str, explanation: str) -> None:
        if self._refused(op):
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.app.mutate(op)

        self.app.push_screen(ConfirmScreen(title, explanation, yes="Accept", no="Not now", danger=True), done)

    # -- filter, command line, sort ------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        self.query_one("#cmdline", Input).display = False
        box.display = True
        self.set_focus(box)  # not box.focus(): that waits a turn, and keys behind "/" would miss the box

    def action_command_line(self) -> None:
        box = self.query_one("#cmdline", Input)
        box.value = ""
        box.display = True
        self.set_focus(box)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table.set_filter(event.value)
            self._show_match_count()

    def _show_match_count(self) -> None:
        box = self.query_one("#filter", Input)
        table = self.table
        box.border_subtitle = f"{table.row_count} of {table.total_count} match" if table.filter_text else ""

    def action_submit_box(self) -> None:
        """Enter in the filter (keep it) or the command line (run it); the table has the focus at once."""
        box = self.focused
        if not isinstance(box, Input):
            return
        self.set_focus(self.table)
        # Enter is a priority key, handled as it reaches the screen: keys typed just before it
        # (one burst: a paste, a fast typist over SSH) may still wait in the box's own queue.
        # Read the box after it has taken them, so `:sort state` + Enter never runs `:so`.
        box.call_later(self._submit_now, box)

    def _submit_now(self, box: Input) -> None:
        if box.id == "filter":
            box.display = bool(box.value)
        elif box.id == "cmdline":
            box.display = False
            self.run_line(box.value)

    def run_line(self, line: str) -> None:
        """Carry out one `:` command line."""
        names = self.table.visible_names() if self.ledger is not None else []
        try:
            command = parse(line, targets=names, read_only=self.app.read_only)
        except CommandError as error:
            self.notify(str(error), severity="warning", markup=False)
            return
        self.run_command(command)

    def run_command(self, command: Command) -> None:
        """Do what `command` asks (it is data: the name and its argument)."""
        name, arg = command.name, command.arg
        spec = BY_NAME.get(name)
        if spec is not None and spec.action is not None:
            self._run_key_action(spec.action, arg)
        elif name == "approve":
            self.approve_target(arg)
        elif name == "reject":
            self.action_reject(arg)
        elif name == "filter":
            box = self.query_one("#filter", Input)
            box.value = arg
            box.display = bool(arg)
            self.table.set_filter(arg)
            self._show_match_count()
        elif name == "sort":
            key, _, order = arg.partition(" ")
            if key not in SORTS:
                self.notify(f"sort by one of: {', '.join(SORTS)}", severity="warning", markup=False)
                return
            self.table.set_sort(key, reverse=order.strip() in ("desc", "reverse", "!"))
        elif name == "goto":
            if not self.table.move_to(arg):
                self.notify(f"no target {clean_line(arg)!r} is shown", severity="warning", markup=False)
        elif name == "theme":
            self.app.set_theme(arg or None)
        elif name == "accept-removal":
            self.action_accept_removal()
        elif name == "accept-rollback":
            self.action_accept_rollback()
        elif name == "help":
            self.action_help()
        elif name == "quit":
            self.app.call_later(self.app.action_quit)

    def _run_key_action(self, action: str, target: str) -> None:
        """A key's action typed as a command: on `target` (moved to first) when one is given."""
        if target and not self.table.move_to(target):
            self.notify(f"no target {clean_line(target)!r} is shown", severity="warning", markup=False)
            return
        if self.check_action(action, ()) is not True:
            self.notify(f":{action.replace('_', '-')} does nothing now (the ledger is "
                        f"{'paused' if action == 'pause' else 'not paused' if action == 'unpause' else 'not ready for it'})",
                        severity="warning", markup=False)
            return
        method = getattr(self, f"action_{action}", None) or getattr(self.table, f"action_{action}")
        method()

    def action_clear_filter(self) -> None:
        cmdline = self.query_one("#cmdline", Input)
        if cmdline.display and self.focused is cmdline:
            cmdline.display = False
            self.set_focus(self.table)
            return
        box = self.query_one("#filter", Input)
        if box.display or self.table.filter_text:
            box.value = ""
            box.display = False
            self.table.set_filter("")
            self.set_focus(self.table)

    def action_sort(self) -> None:
        key = self.table.cycle_sort()
        self.notify(f"Sorted by {key}", timeout=2)

    # -- view ------------------------------------------------------------------------------

    def action_toggle_side(self) -> None:
        shown = not self.query_one("#side").display
        self._set_side(shown)
        self._side_user_choice = shown

    def action_toggle_follow(self) -> None:
        log = self.query_one(LogPane)
        log.follow = not log.follow

    def action_reload(self) -> None:
        self.app.reload()

    def action_cycle_theme(self) -> None:
        self.app.set_theme(None)

    def action_copy_name(self) -> None:
        name = self.table.cursor_name
        if name is not None:
            self.copy_name(name)

    def action_copy_command(self) -> None:
        name = self.table.cursor_name
        if name is not None:
            self.copy_command(name)

    def copy_name(self, name: str) -> None:
        """Put `name` on the clipboard (OSC 52: base64 inside our own sequence, so it works over SSH)."""
        self.app.copy_to_clipboard(name)
        self.notify(f"Copied {clean_line(name)}", timeout=2, markup=False)

    def copy_command(self, name: str) -> None:
        """Put the command that would run next on `name` on the clipboard."""
        if self.ledger is None or name not in self.ledger.targets:
            return
        try:
            pending = self.app.controller.next_command(self.ledger, name)
        except HandoffError as error:
            self.notify(f"Nothing copied: {error}", severity="warning", markup=False)
            return
        if pending is None:
            self.notify(f"No command would run next on {clean_line(name)}.", severity="warning", markup=False)
            return
        self.app.copy_to_clipboard(shlex.join(pending.argv))
        self.notify(f"Copied the {clean_line(pending.step.name)} command of {clean_line(name)}", timeout=2, markup=False)

    def help_sections(self) -> list[Section]:
        """Help, from the bindings (after read-only mode took out what it cannot do) and the `:` commands."""
        table_actions = {b.action for b in TargetTable.BINDINGS}
        move, act = [], []
        for binding, text in self.visible_actions():
            key = "enter" if binding.key == "enter" else binding.key_display or self.app.get_key_display(binding)
            (move if binding.action in table_actions else act).append((key, text))
        anywhere = [("esc", "Close a dialog, the filter or the command line"), ("tab", "Next field in a dialog"),
                    ("ctrl+p", "Command palette: every action by name"), ("ctrl+q", "Quit from anywhere")]
        commands = [(f":{s.name}" + (f" {s.arg}" if s.arg else ""), s.help) for s in available(self.app.read_only)]
        return [("Move", move), ("Act", act), ("Anywhere", anywhere), ("Commands (:)", commands)]

    def action_help(self) -> None:
        mode = "READ-ONLY: actions that change the ledger are not available." if self.app.read_only else \
            f"OPERATOR: acting as {clean_line(self.app.controller.actor)}."
        self.app.push_screen(HelpScreen(self.help_sections(), mode))

    async def action_quit(self) -> None:
        await self.app.action_quit()

    def on_target_table_selected(self, message: TargetTable.Selected) -> None:
        self.open_detail(message.name)

    def open_detail(self, name: str) -> None:
        """The detail screen of `name`, with what would run next."""
        if self.ledger is None or name not in self.ledger.targets:
            return
        pending, problem = self.next_command_of(name)
        screen = DetailScreen(name, self.ledger.targets[name], self.header_info(), pending, problem)
        self.app.push_screen(screen)
        self.app.load_history(name, screen)

    def next_command_of(self, name: str) -> tuple[Any, str | None]:
        """(what would run next on `name`, or None; why it could not be rendered, or None)."""
        try:
            return self.app.controller.next_command(self.ledger, name), None
        except HandoffError as error:
            return None, f"could not render the next command: {error}"


__all__ = ["MainActions", "MUTATING"]
