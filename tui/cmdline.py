"""The `:` command line (k9s style): `:approve db-18`, `:filter failed`, `:sort state`, `:theme`, `:q`.

A typed line becomes a `Command` (data: the table's `Action` and its argument); the main
screen carries it out through the same door as a key. Every command is a row of the one
action table (`tui.registry`); nothing here lists commands of its own. `:approve` opens
the approval dialog, never approves by itself. Commands that change the ledger are absent
in read-only mode: not suggested, not in the help, refused with a note if typed anyway. A
bare target name (`:db-18`) moves the cursor there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from textual.binding import Binding
from textual.suggester import Suggester
from textual.widgets import Input

from tui.registry import Action, ActionTable


@dataclass(frozen=True)
class Command:
    """What the operator asked for: a row of the action table, and its argument."""

    action: Action
    arg: str = ""


class CommandError(ValueError):
    """A line that is not a command; the message says what would be."""


def parse(line: str, table: ActionTable, *, targets: Iterable[str] = (), read_only: bool = False) -> Command:
    """`line` (with or without the leading `:`) as a Command; raises CommandError."""
    text = line.strip().removeprefix(":").strip()
    offered = table.commands(read_only)
    if not text:
        raise CommandError("type a command: " + ", ".join(a.command or "" for a in offered))
    word, _, arg = text.partition(" ")
    action = table.by_command.get(word)
    if action is None:
        if text in set(targets) and "goto" in table.by_name:
            return Command(table.by_name["goto"], text)
        raise CommandError(f"unknown command :{word}; try " + ", ".join(f":{a.command}" for a in offered))
    if not table.offered(action.name, read_only):
        raise CommandError(f"read-only: :{action.command} changes the ledger and is not available in this view")
    arg = arg.strip()
    if action.arg in ("TARGET", "KEY") and not arg:
        raise CommandError(f":{action.command} needs a {action.arg.lower()}: :{action.command} {action.arg}")
    return Command(action, arg)


class CommandSuggester(Suggester):
    """Completes command names, then their argument (targets, sort keys, theme names)."""

    def __init__(self, table: ActionTable, read_only: Callable[[], bool],
                 words_for: Callable[[Action], Iterable[str]]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self._table = table
        self._read_only = read_only
        self._words_for = words_for

    async def get_suggestion(self, value: str) -> str | None:
        return self.complete(value)

    def complete(self, value: str) -> str | None:
        """The completed line for `value`, or None (synchronous: Tab must not wait on a worker)."""
        text = value.removeprefix(":")
        prefix = value[: len(value) - len(text)]
        word, space, arg = text.partition(" ")
        if not space:
            names = [a.command for a in self._table.commands(self._read_only()) if a.command]
            match = next((n for n in names if n.startswith(word) and n != word), None)
            return f"{prefix}{match}" if match and word else None
        action = self._table.by_command.get(word)
        if action is None or not arg:
            return None
        match = next((w for w in self._words_for(action) if w.startswith(arg) and w != arg), None)
        return f"{prefix}{word} {match}" if match else None


class CommandInput(Input):
    """The `:` line: Tab completes the command or its argument and keeps the focus here
    (as the placeholder promises); with nothing to complete it does nothing.

    | Key | Action | What it does |
    |---|---|---|
    | tab | complete | Complete the command or its argument |
    """

    BINDINGS = [Binding("tab", "complete", "Complete", show=False, id="cmdline.complete",
                        tooltip="Complete the command or its argument (a target name, a sort key)")]

    def action_complete(self) -> None:
        suggester = self.suggester
        done = suggester.complete(self.value) if isinstance(suggester, CommandSuggester) else None
        if done:
            self.value = done
            self.cursor_position = len(done)
