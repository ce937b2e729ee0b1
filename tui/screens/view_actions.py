"""What the main screen's viewing actions do (a mixin of `MainScreen`): filter, command line,
sort, panes, theme, copy, help, detail.

Each `do_NAME(self, arg)` is a row's `method` in `tui.screens.action_table`; none of them
changes the ledger.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from textual.widgets import Input

from engine.api import HandoffError
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen
from tui.text import clean_line
from tui.widgets.log_pane import LogPane
from tui.widgets.note_panel import SHORT, NotePanel
from tui.widgets.table_view import SORTS, filter_problem

if TYPE_CHECKING:
    from tui.host import AppHost
    from tui.widgets.target_table import TargetTable


class ViewActions:
    """The main screen's actions that only change what is shown; see `tui.screens.action_table`."""

    app: AppHost
    ledger: Any
    snapshot: Any
    table: TargetTable
    note_expanded: bool
    _side_user_choice: bool | None

    # MainScreen supplies help_sections(), run_line(), header_info(), _show_note() and _set_side().

    # -- filter, command line, sort ------------------------------------------------------

    def do_filter(self, arg: str = "") -> None:
        box = self.query_one("#filter", Input)
        self.query_one("#cmdline", Input).display = False
        box.display = True
        self.set_focus(box)  # not box.focus(): that waits a turn, and keys behind "/" would miss the box

    def do_command_line(self, arg: str = "") -> None:
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

    def do_submit_box(self, arg: str = "") -> None:
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

    def do_clear_filter(self, arg: str = "") -> None:
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

    def do_sort(self, arg: str = "") -> None:
        """`o` cycles the sort; `:sort KEY [desc]` sets it."""
        if not arg:
            self.notify(f"Sorted by {self.table.cycle_sort()}", timeout=2)
            return
        key, _, order = arg.partition(" ")
        if key not in SORTS:
            self.notify(f"sort by one of: {', '.join(SORTS)}", severity="warning", markup=False)
            return
        self.table.set_sort(key, reverse=order.strip() in ("desc", "reverse", "!"))

    def do_set_filter(self, arg: str = "") -> None:
        """`:filter TEXT`: the filter box shows TEXT and the table matches it; empty clears."""
        box = self.query_one("#filter", Input)
        box.value = arg
        box.display = bool(arg)
        self.table.set_filter(arg)
        self._show_match_count()

    def open_link(self, target: str | None, filter_text: str | None) -> None:
        """What a served page's URL asked for (`?filter=`, `?target=`; tui.viewer): the filter
        applied, the cursor on the target and its detail open. What cannot be done is one
        warning line; the screen opens as it would without the link."""
        problems: list[str] = []
        if filter_text:
            problem = filter_problem(filter_text)
            if problem is None:
                self.do_set_filter(filter_text)
            else:
                problems.append(f"filter {_shown(filter_text)} not applied ({problem})")
        if target:
            if self.ledger is None or target not in self.ledger.targets:
                problems.append(f"no target {_shown(target)} in this ledger")
            elif not self.table.move_to(target, top=True):
                problems.append(f"{_shown(target)} is not shown under the filter")
            else:
                self.open_detail(target)
        if problems:
            self.notify("Link: " + "; ".join(problems) + ".", severity="warning", timeout=60, markup=False)

    def do_goto(self, arg: str = "") -> None:
        if not self.table.move_to(arg):
            self.notify(f"no target {clean_line(arg)!r} is shown", severity="warning", markup=False)

    def do_theme(self, arg: str = "") -> None:
        self.app.set_theme(arg or None)

    def do_toggle_note(self, arg: str = "") -> None:
        panel = self.query_one(NotePanel)
        if self.size.height < SHORT and panel.display:
            # A short screen: one line, or the whole panel.
            self.note_expanded = not self.note_expanded
            self._show_note()
            return
        panel.display = not panel.display


    # -- view ------------------------------------------------------------------------------

    def do_toggle_side(self, arg: str = "") -> None:
        shown = not self.query_one("#side").display
        self._set_side(shown)
        self._side_user_choice = shown

    def do_toggle_follow(self, arg: str = "") -> None:
        log = self.query_one(LogPane)
        log.follow = not log.follow

    def do_reload(self, arg: str = "") -> None:
        self.app.reload()

    def do_cycle_theme(self, arg: str = "") -> None:
        self.app.set_theme(None)

    def do_copy_name(self, arg: str = "") -> None:
        name = self.table.cursor_name
        if name is not None:
            self.copy_name(name)

    def do_copy_command(self, arg: str = "") -> None:
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

    def do_timeline(self, arg: str = "") -> None:
        """The journal over time (of target `arg`, when given), read-only."""
        from tui.screens.timeline import TimelineScreen  # a DataTable: loaded when the timeline first opens

        self.app.push_screen(TimelineScreen(self.app.controller, arg or None))

    def do_help(self, arg: str = "") -> None:
        mode = "READ-ONLY: actions that change the ledger are not available." if self.app.read_only else \
            f"OPERATOR: acting as {clean_line(self.app.controller.actor)}."
        self.app.push_screen(HelpScreen(self.help_sections(), mode))

    def do_quit(self, arg: str = "") -> None:
        self.app.call_later(self.app.action_quit)

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


def _shown(value: str, width: int = 40) -> str:
    """A link's value in a one-line message: escapes visible, quoted, cut to `width`."""
    text = clean_line(value)
    return repr(text if len(text) <= width else text[:width - 1] + "…")


__all__ = ["ViewActions"]
