"""The one door every action of the main screen goes through: a key, a `:` line, the palette.

`ActionDoor` is a part the main screen owns (composed, not mixed in). It reads the one
action table (`tui.registry.ActionTable`) for everything: what read-only mode refuses,
what a broken file refuses, what help, palette and Tab completion offer. `perform` refuses
before any dialog opens (a reason typed into a prompt the engine would refuse is a lost
reason), moves the cursor to a named target, then calls the row's method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import themes
from tui.cmdline import Command, CommandError, parse
from tui.registry import Action, ActionTable
from tui.text import clean_line
from tui.widgets.banners import broken_words
from tui.widgets.table_view import SORTS

if TYPE_CHECKING:
    from textual.binding import Binding

    from tui.host import AppHost
    from tui.screens.help import Section
    from tui.widgets.target_table import TargetTable


class ActionScreen(Protocol):
    """What the door needs of the screen it serves."""

    app: AppHost
    ledger: Any
    broken: Any

    @property
    def table(self) -> TargetTable: ...

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...

    def notify(self, message: str, **kwargs: Any) -> None: ...


class ActionDoor:
    """Runs and lists the actions of one table for one screen."""

    def __init__(self, screen: ActionScreen, table: ActionTable) -> None:
        self.screen = screen
        self.table = table

    # -- doing ------------------------------------------------------------------------

    def refused(self, action: Action) -> bool:
        """True (and say so) when `action` may not run now: read-only, or a file that does not parse."""
        screen = self.screen
        if not action.mutating:
            return False
        what = action.name.replace("_", " ")
        if screen.app.read_only:
            screen.notify(f"read-only: {what} is not available ({screen.app.read_only_reason}).",
                          severity="warning", markup=False)
            return True
        if screen.broken is not None and not action.while_broken:
            screen.notify(f"{what}: {clean_line(str(screen.broken))}. {broken_words(screen.broken).todo} (nothing was "
                          "asked or changed).", severity="error", markup=False)
            return True
        return False

    def perform(self, action: Action, arg: str = "") -> None:
        """Carry out `action` (on `arg`): the same for a key, a `:` line and the palette."""
        if self.refused(action):
            return
        if action.arg == "[TARGET]" and arg and not self.screen.table.move_to(arg):
            self.screen.notify(f"no target {clean_line(arg)!r} is shown", severity="warning", markup=False)
            return
        action.method(self.screen, arg)

    def run(self, command: Command) -> None:
        """A `:` command: as its key would, unless the screen says the key does nothing now."""
        action = command.action
        if action.key is not None and self.screen.check_action(action.name, ()) is not True:
            state = {"pause": "paused", "unpause": "not paused"}.get(action.name, "not ready for it")
            self.screen.notify(f":{action.command} does nothing now (the ledger is {state})",
                               severity="warning", markup=False)
            return
        self.perform(action, command.arg)

    def run_line(self, line: str) -> None:
        """Parse and carry out one `:` line; a bad one gets a note saying what would work."""
        screen = self.screen
        names = screen.table.visible_names() if screen.ledger is not None else []
        try:
            command = parse(line, self.table, targets=names, read_only=screen.app.read_only)
        except CommandError as error:
            screen.notify(str(error), severity="warning", markup=False)
            return
        self.run(command)

    # -- listing ----------------------------------------------------------------------

    def offered(self, name: str) -> bool:
        """Whether footer, help and palette offer `name` now."""
        return self.table.offered(name, self.screen.app.read_only)

    def visible(self) -> list[Action]:
        """Keyed actions offered and possible now: the source of help's "Act" and the palette."""
        out = []
        for action in self.table.actions:
            if action.key is None or not self.offered(action.name) or action.name == "submit_box":
                continue
            if action.name in ("filter", "command_line") or self.screen.check_action(action.name, ()) is True:
                out.append(action)
        return out

    def palette(self) -> list[Action]:
        """The palette's entries: the visible keys, plus commands that need no argument and apply now."""
        extra = [a for a in self.table.actions if a.key is None and a.arg == ""
                 and self.offered(a.name) and self.screen.check_action(a.name, ()) is True]
        return [*self.visible(), *extra]

    def help_sections(self, table_bindings: list[Binding]) -> list[Section]:
        """Help: the table widget's own keys, the actions offered now, and every `:` command."""
        def key(binding: Binding) -> str:
            return "enter" if binding.key == "enter" else binding.key_display or self.screen.app.get_key_display(binding)

        move = [(key(b), b.tooltip or b.description) for b in table_bindings]
        act = [(key(a.binding()), a.help) for a in self.visible()]
        anywhere = [("esc", "Close a dialog, the filter or the command line"), ("tab", "Next field in a dialog"),
                    ("ctrl+p", "Command palette: every action by name"), ("ctrl+q", "Quit from anywhere")]
        commands = [(a.usage(), a.help) for a in self.table.commands(self.screen.app.read_only)]
        return [("Move", move), ("Act", act), ("Anywhere", anywhere), ("Commands (:)", commands)]

    def words_for(self, action: Action) -> list[str]:
        """What Tab may complete after `:command` (only names that are plain text: a
        suggestion is drawn in the box as it is)."""
        screen = self.screen
        ledger = screen.ledger
        names = [n for n in screen.table.visible_names() if clean_line(n) == n]
        kind = action.completes
        if kind == "awaiting":
            return [n for n in names if ledger and n in ledger.targets and ledger.targets[n].state == "awaiting_approval"]
        if kind == "targets":
            return names
        if kind == "sorts":
            return list(SORTS)
        if kind == "themes":
            return list(themes.THEME_NAMES)
        if kind == "states":
            return [f"state:{s}" for s in (ledger.states() if ledger else ())]
        return []
