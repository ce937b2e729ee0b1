"""The `:` command line (k9s style): `:approve db-18`, `:filter failed`, `:sort state`, `:theme`, `:q`.

A typed line becomes a `Command` (data: the command's name and its argument); the
main screen carries it out. `:approve` opens the approval dialog, never approves
by itself. Commands that change the ledger are absent in read-only mode: not
suggested, not in the help, refused with a note if typed anyway. A bare target
name (`:db-18`) moves the cursor there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from textual.suggester import Suggester


@dataclass(frozen=True)
class Spec:
    """One command: its name, aliases, argument, help, and whether it changes the ledger."""

    name: str
    arg: str
    help: str
    mutating: bool = False
    aliases: tuple[str, ...] = ()


SPECS: tuple[Spec, ...] = (
    Spec("approve", "TARGET", "open TARGET's approval dialog (it never approves by itself)", mutating=True),
    Spec("reject", "TARGET", "reject TARGET's awaiting step, with a reason", mutating=True),
    Spec("filter", "TEXT", "show only matching targets (state:failed, a name, a checkpoint); empty clears", aliases=("f",)),
    Spec("sort", "KEY", "sort by ledger, state, name or age (`:sort age desc` reverses)"),
    Spec("goto", "TARGET", "move the cursor to TARGET (`:TARGET` does it too)", aliases=("g",)),
    Spec("theme", "[NAME]", "switch theme (the next one, or NAME)"),
    Spec("accept-removal", "", "the targets missing from the file were removed on purpose", mutating=True),
    Spec("accept-rollback", "", "the older file is the right one", mutating=True),
    Spec("help", "", "every key and command", aliases=("h",)),
    Spec("quit", "", "quit handoff-tui", aliases=("q", "q!")),
)
BY_NAME: dict[str, Spec] = {n: s for s in SPECS for n in (s.name, *s.aliases)}


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
