"""Reading a Bash-tool command line the way the pre-tool-use hook needs to (best effort).

A command is split into simple commands (at `;`, `&&`, `||`, `|`, `&` and line breaks),
each into words as a shell would quote them, with its redirections (`> path`) apart.
From that the hook learns three things:
- the `handoff run LEDGER TARGET [STEP]` invocations in it;
- whether it writes the ledger or a file beside it (a redirection onto one, or
  `tee`, `sed -i`, `mv`, `cp`, `rm`, `truncate`, `dd of=`, `ln` naming one);
- whether it runs a runbook step's command outside `handoff run` (its literal words, a
  path's file name for a path, together with a target's name).
A command built at run time (`bash -c "$(...)"`, a variable holding the program) gets
through: this is a net for honest mistakes, and the guard inside `handoff run` is what
cannot be bypassed (README: "Driving it from Claude Code").
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from engine.model import Ledger

SEPARATORS = {";", "&&", "||", "|", "&", "|&", "(", ")"}
REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<>", "1>", "2>"}
WRITERS = {"tee", "mv", "cp", "rm", "truncate", "ln", "install", "shred", "sponge"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PARTS = re.compile(r"[/=:,@]")


@dataclass
class Command:
    """One simple command: its words, and the paths it redirects output into."""

    words: list[str] = field(default_factory=list)
    writes_to: list[str] = field(default_factory=list)

    def program(self) -> tuple[str, list[str]]:
        """(program's file name, its arguments), past `VAR=x`, `env`, `sudo`, `command`, `exec`."""
        words = list(self.words)
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in ("env", "sudo", "command", "exec", "nohup", "time")):
            words.pop(0)
        if not words:
            return "", []
        return os.path.basename(words[0]), words[1:]


def split(line: str) -> list[Command]:
    """The simple commands of a command line (unparseable quoting: one command of raw words)."""
    out: list[Command] = []
    for piece in line.split("\n"):
        lexer = shlex.shlex(piece, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote: fall back to plain words
            tokens = piece.split()
        current = Command()
        pending_redirect = False
        for token in tokens:
            if token in SEPARATORS:
                if current.words or current.writes_to:
                    out.append(current)
                current = Command()
                continue
            if token in REDIRECTS or (token.endswith(">") and token.rstrip(">").isdigit()):
                pending_redirect = True
                continue
            if pending_redirect:
                current.writes_to.append(token)
                pending_redirect = False
                continue
            current.words.append(token)
        if current.words or current.writes_to:
            out.append(current)
    return out


@dataclass
class Run:
    """A `handoff run` found in a command line."""

    ledger: str
    target: str | None
    step: str | None


def handoff_runs(commands: list[Command]) -> list[Run]:
    """Every `handoff run LEDGER TARGET [STEP]` (or `python -m engine.cli.main run ...`)."""
    found = []
    for command in commands:
        program, args = command.program()
        if program.startswith("python") and args[:2] == ["-m", "engine.cli.main"]:
            args = args[2:]
        elif program != "handoff":
            continue
        if not args or args[0] != "run":
            continue
        positional, skip = [], False
        for arg in args[1:]:
            if skip:
                skip = False
            elif arg == "--as":
                skip = True
            elif not arg.startswith("-"):
                positional.append(arg)
        if positional:
            found.append(Run(positional[0], (positional[1:2] or [None])[0], (positional[2:3] or [None])[0]))
    return found


def protected(ledger_real: str, path: str, cwd: str) -> bool:
    """Is `path` (as a command names it, from `cwd`) the ledger or a file beside it that is the engine's?"""
    if not path or path.startswith("-"):
        return False
    real = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
    return real == ledger_real or real.startswith(ledger_real + ".")


def writes_ledger(commands: list[Command], ledger_real: str, cwd: str) -> str | None:
    """How the command line would write the ledger or a sidecar directly, or None."""
    for command in commands:
        for path in command.writes_to:
            if protected(ledger_real, path, cwd):
                return f"it redirects output into {path}"
        program, args = command.program()
        hits = [a for a in args if protected(ledger_real, a.split("=", 1)[1] if a.startswith("of=") else a, cwd)]
        if not hits:
            continue
        if program in WRITERS or program == "dd" or (program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args)):
            return f"`{program}` would change {hits[0]}"
    return None


def _literal(arg: str, values: dict[str, str]) -> str | None:
    """A template argument as the command line would show it, if it holds no per-target
    placeholder: the file name of a path (the folder differs between hosts)."""
    if re.search(r"\{(?!ledger_dir\}|python\})[A-Za-z_][A-Za-z0-9_]*\}", arg):
        return None
    if arg == "{python}":
        return None
    text = arg.replace("{ledger_dir}", values["ledger_dir"]).replace("{python}", values["python"])
    return os.path.basename(text) if "/" in text else text


def raw_step(commands: list[Command], ledger: Ledger, ledger_dir: str, python: str) -> tuple[str, str] | None:
    """(step, target) when a simple command is a runbook step's command for a target,
    run outside `handoff run`; None otherwise."""
    names = set(ledger.targets)
    values = {"ledger_dir": ledger_dir, "python": python}
    for command in commands:
        program, args = command.program()
        words = [program, *args]
        if program == "handoff" or (program.startswith("python") and args[:2] == ["-m", "engine.cli.main"]):
            continue
        shown = {os.path.basename(w) if "/" in w else w for w in words}
        parts = {p for w in words for p in _PARTS.split(w) if p}
        hit = next((p for p in sorted(parts) if p in names), None)
        if hit is None:
            continue
        for step in ledger.steps():
            literals = [x for x in (_literal(a, values) for a in step.run or []) if x]
            if literals and all(x in shown for x in literals):
                return step.name, hit
    return None
