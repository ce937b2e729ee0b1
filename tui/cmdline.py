"""The `:` command line (k9s style): `:approve db-18`, `:filter failed`, `:sort state`, `:theme`, `:q`.

A typed line becomes a `Command` (data: the command's name and its argument); the
main screen carries it out. `:approve` opens the approval dialog, never approves
by itself. Commands that change the ledger are absent in read-only mode: not
suggested, not in the help, refused with a note if typed anyway. A bare target
name (`:db-18`) moves the cursor there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.suggester import Suggester
from textual.widgets import Input


@dataclass(frozen=True)
class Spec:
    """One command: its name, aliases, argument, help, and whether it changes the ledger."""

    name: str
    arg: str
    help: str
    mutating: bool = False
    aliases: tuple[str, ...] = ()
    action: str | None = None  # a key's action this command runs (the key table is the one source)


SPECS: tuple[Spec, ...] = (
    Spec("approve", "TARGET", "open TARGET's approval dialog (it never approves by itself)", mutating=True),
    Spec("reject", "TARGET", "reject TARGET's awaiting step, with a reason", mutating=True),
    Spec("filter", "TEXT", "show only matching targets: regex words, state:failed, !negated, a|b, is:attention; empty clears", aliases=("f",)),
    Spec("sort", "KEY", "sort by ledger, state, name or age (`:sort age desc` reverses)"),
    Spec("goto", "TARGET", "move the cursor to TARGET (`:TARGET` does it too)", aliases=("g",)),
    Spec("theme", "[NAME]", "switch theme (the next one, or NAME)"),
    Spec("accept-removal", "", "the targets missing from the file were removed on purpose", mutating=True),
    Spec("accept-rollback", "", "the older file is the right one", mutating=True),
    Spec("help", "", "every key and command", aliases=("h",)),
    Spec("quit", "", "quit handoff-tui", aliases=("q", "q!")),
)
BY_NAME: dict[str, Spec] = {n: s for s in SPECS for n in (s.name, *s.aliases)}


def install_actions(bindings: Iterable[Any], mutating: frozenset[str], targeted: frozenset[str]) -> None:
    """Make every key's action a `:` command too (`retry` -> `:retry [TARGET]`), from the key
    table itself: keys, help, palette and `:` can never disagree. Commands above keep their
    own specs; called once, by the main screen, with its bindings."""
    global SPECS
    added = []
    for binding in bindings:
        name = binding.action.replace("_", "-")
        if name in BY_NAME or not binding.action.isidentifier():
            continue
        arg = "[TARGET]" if binding.action in targeted else ""
        spec = Spec(name, arg, binding.tooltip or binding.description, mutating=binding.action in mutating,
                    action=binding.action)
        BY_NAME[name] = spec
        added.append(spec)
    SPECS = (*SPECS, *added)


@dataclass(frozen=True)
class Command:
    """What the operator asked for."""

    name: str
    arg: str = ""


class CommandError(ValueError):
    """A line that is not a command; the message says what would be."""


def available(read_only: bool) -> list[Spec]:
    """The commands this mode offers."""
    return [s for s in SPECS if not (read_only and s.mutating)]


def parse(line: str, *, targets: Iterable[str] = (), read_only: bool = False) -> Command:
    """`line` (with or without the leading `:`) as a Command; raises CommandError."""
    text = line.strip().removeprefix(":").strip()
    if not text:
        raise CommandError("type a command: " + ", ".join(s.name for s in available(read_only)))
    word, _, arg = text.partition(" ")
    spec = BY_NAME.get(word)
    if spec is None:
        if text in set(targets):
            return Command("goto", text)
        raise CommandError(f"unknown command :{word}; try " + ", ".join(f":{s.name}" for s in available(read_only)))
    if spec.mutating and read_only:
        raise CommandError(f"read-only: :{spec.name} changes the ledger and is not available in this view")
    arg = arg.strip()
    if spec.arg in ("TARGET", "KEY") and not arg:
        raise CommandError(f":{spec.name} needs a {spec.arg.lower()}: :{spec.name} {spec.arg}")
    return Command(spec.name, arg)


class CommandSuggester(Suggester):
    """Completes command names, then their argument (targets, sort keys, theme names)."""

    def __init__(self, read_only: Callable[[], bool], words_for: Callable[[str], Iterable[str]]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
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
            names = [s.name for s in available(self._read_only())]
            match = next((n for n in names if n.startswith(word) and n != word), None)
            return f"{prefix}{match}" if match and word else None
        spec = BY_NAME.get(word)
        if spec is None or not arg:
            return None
        match = next((w for w in self._words_for(spec.name) if w.startswith(arg) and w != arg), None)
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
