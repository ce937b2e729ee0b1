"""The one table of the main screen's actions, as a type: `Action` rows and `ActionTable` lookups.

Each row says everything about one action: its name (the key binding's action), the
method that carries it out, whether it changes the ledger, its `:` command and aliases,
its key, and its footer and help text. The key bindings, the read-only filter, the help
screen, the command palette, the `:` command line (parsing and Tab completion) and the
docstring key table are all built from one `ActionTable`; none keeps a list of its own.
The rows themselves live in `tui.screens.action_table` (beside the methods they name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding

# What follows a command: nothing, a target (required, or optional: the cursor's when
# left out; the cursor moves to a given one first), free text, a sort key, a theme name.
ARGS = ("", "TARGET", "[TARGET]", "TEXT", "KEY", "[NAME]")


@dataclass(frozen=True)
class Action:
    """One thing the operator can do on the main screen."""

    name: str                               # the binding's action name; unique in the table
    method: Callable[[Any, str], None]      # method(screen, arg): what it does
    description: str                        # the footer's word(s)
    help: str                               # help screen, palette and `:` help
    key: str | None = None                  # None: a `:` command only
    key_display: str | None = None
    show: bool = True                       # in the footer (when it fits)
    priority: bool = False                  # a priority binding (keys that must win over a text box)
    mutating: bool = False                  # changes the ledger, starts/stops a process, or only serves one that does
                                            # (marks for a batch approval): never in read-only mode
    while_broken: bool = False              # still allowed while the file does not parse (a stop must get through)
    command: str | None = None              # the `:` name; None: a key only
    aliases: tuple[str, ...] = ()
    arg: str = ""                           # one of ARGS
    completes: str = ""                     # what Tab completes after the command: targets, awaiting, sorts, themes, states

    def __post_init__(self) -> None:
        if self.arg not in ARGS:
            raise ValueError(f"action {self.name}: arg {self.arg!r} is not one of {ARGS}")
        if self.key is None and self.command is None:
            raise ValueError(f"action {self.name}: neither a key nor a command reaches it")

    def binding(self) -> Binding:
        """The Textual binding of this row's key."""
        assert self.key is not None
        return Binding(self.key, self.name, self.description, show=self.show, key_display=self.key_display,
                       priority=self.priority, id=f"main.{self.name}", tooltip=self.help)

    def usage(self) -> str:
        """`:retry [TARGET]`, as help shows it."""
        return f":{self.command}" + (f" {self.arg}" if self.arg else "")


class ActionTable:
    """Lookups over the rows; built once, read by everything that offers an action."""

    def __init__(self, actions: Iterable[Action]) -> None:
        self.actions: tuple[Action, ...] = tuple(actions)
        self.by_name: dict[str, Action] = {}
        self.by_command: dict[str, Action] = {}
        for action in self.actions:
            if action.name in self.by_name:
                raise ValueError(f"action {action.name} appears twice in the table")
            self.by_name[action.name] = action
            for word in (action.command, *action.aliases) if action.command else ():
                if word in self.by_command:
                    raise ValueError(f"command :{word} names two actions")
                self.by_command[word] = action
        self.mutating: frozenset[str] = frozenset(a.name for a in self.actions if a.mutating)

    def bindings(self) -> list[Binding]:
        """Every keyed row as a Binding, in table order (the footer's order)."""
        return [a.binding() for a in self.actions if a.key is not None]

    def offered(self, name: str, read_only: bool) -> bool:
        """Whether footer, help, palette and `:` offer `name`: never a mutation in read-only mode."""
        return not (read_only and name in self.mutating)

    def commands(self, read_only: bool) -> list[Action]:
        """The `:` commands this mode offers, in table order."""
        return [a for a in self.actions if a.command and self.offered(a.name, read_only)]

    def key_table(self) -> str:
        """The docstring key table (STYLE.md) of the keyed rows."""
        rows = [f"    | {a.key} | {a.name} | {a.help} |" for a in self.actions if a.key is not None]
        return "\n".join(["    | Key | Action | What it does |", "    |---|---|---|", *rows])
