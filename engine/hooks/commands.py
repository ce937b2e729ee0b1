"""Reading a Bash-tool command line the way the pre-tool-use hook needs to.

engine.hooks.shell splits a line into simple commands and engine.hooks.unwrap reads the
commands nested in them (`$(...)`, backticks, `bash -c`, here-docs fed to a shell,
wrappers such as `env`, `sudo`, `timeout`, `xargs`); `split` gives all of them, flat.
From that the hook learns:
- the `handoff` invocations in it, however spelled (a full path, `python -m
  engine.cli.main`), and the `handoff run LEDGER TARGET [STEP]` ones among them;
- whether it writes the ledger or a file beside it (engine.hooks.writes);
- whether it runs a runbook step's command outside `handoff run` (its literal words, a
  path's file name for a path, together with a target's name; the step's script under
  another name, engine.hooks.renamed; code that names the script, `runpy.run_path('sim.py')`).
A command built at run time (a program in a variable, a script fetched and piped into
a shell) still gets through: this is a net, and the guard inside `handoff run` and the
engine's own refusal of people-only operations are what cannot be bypassed (README:
"Driving it from Claude Code").
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, NamedTuple

from engine.hooks import renamed
from engine.hooks.shell import Command
from engine.hooks.unwrap import code_words, parse
from engine.hooks.wrappers import XARGS_WORD
from engine.hooks.writes import protected, writes_ledger

if TYPE_CHECKING:  # annotation only: raw_step also takes the hook's facts (engine.hooks.facts)
    from engine.hooks.facts import HookFacts
    from engine.ledger.model import Ledger

__all__ = ["Command", "Run", "split", "handoff_args", "handoff_runs", "protected", "writes_ledger", "raw_step"]
_PARTS = re.compile(r"[/=:,@]")
_IMPORTED = re.compile(r"\b(?:import|from)\s+(\w+)")  # a module python code imports (`import sim`)
_PER_TARGET = re.compile(r"\{(?!ledger_dir\}|python\})[A-Za-z_][A-Za-z0-9_]*\}")  # a placeholder filled per target


def split(line: str, cwd: str = ".") -> list[Command]:
    """Every simple command of a command line, at every depth of nesting."""
    return parse(line, cwd).commands


def handoff_args(command: Command) -> list[str] | None:
    """The arguments of a `handoff` invocation (any path to it, or `python -m engine.cli.main`), or None."""
    program, args = command.program()
    if program == "handoff":
        return _past_options(args)
    if program.startswith("python"):
        i = 0
        while i < len(args) and args[i].startswith("-") and not args[i].startswith(("-m", "-c")):
            i += 2 if args[i] in ("-W", "-X") else 1
        if i < len(args) and args[i].startswith("-m"):
            module = args[i][2:] or (args[i + 1] if i + 1 < len(args) else "")
            rest = args[i + 1:] if args[i][2:] else args[i + 2:]
            if module in ("engine.cli.main", "engine.cli"):
                return _past_options(rest)
    return None


def _past_options(args: list[str]) -> list[str]:
    """`handoff -v note ...` is `handoff note ...`: the command is the first word that is no
    option, as engine.cli.main reads it (`handoff` takes no option with a value); a help
    option before it is kept, since it makes argparse print help and run nothing."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-h", "--help", "--version"):
        i += 1
    return args[i:]


def python_module(command: Command) -> str | None:
    """The module `python -m MODULE` runs, or None."""
    program, args = command.program()
    if not program.startswith("python"):
        return None
    for i, arg in enumerate(args):
        if arg.startswith("-m"):
            return arg[2:] or (args[i + 1] if i + 1 < len(args) else "")
        if not arg.startswith("-"):
            return None
    return None


class Run(NamedTuple):
    """A `handoff run` found in a command line."""

    ledger: str
    target: str | None
    step: str | None


def handoff_runs(commands: list[Command]) -> list[Run]:
    """Every `handoff run LEDGER TARGET [STEP]` (or `python -m engine.cli.main run ...`)."""
    found = []
    for command in commands:
        args = handoff_args(command)
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
            found.append(Run(positional[0], positional[1] if len(positional) > 1 else None, positional[2] if len(positional) > 2 else None))
    return found


def _rendered(arg: str, values: dict[str, str]) -> str | None:
    """A template argument filled in, if it holds no per-target placeholder (and is not the interpreter)."""
    if _PER_TARGET.search(arg) or arg == "{python}":
        return None
    return arg.replace("{ledger_dir}", values["ledger_dir"]).replace("{python}", values["python"])


def _literal(arg: str, values: dict[str, str]) -> str | None:
    """A template argument as the command line would show it, if it holds no per-target
    placeholder: the file name of a path (the folder differs between hosts)."""
    text = _rendered(arg, values)
    if text is None:
        return None
    return _shown(text)


def _shown(word: str) -> str:
    """A command word as a step's literal words are compared with it: a path by its file name."""
    return os.path.basename(word) if "/" in word else word


def raw_step(commands: list[Command], ledger: Ledger | HookFacts, ledger_dir: str,
             python: str) -> tuple[str, str, str] | None:
    """(step, target, how) when a simple command is a runbook step's command for a target,
    run outside `handoff run`; None otherwise. A command that runs a step's script (under any name)
    with words the hook cannot work out (a function's `"$@"` after `shift`, `"${@:2}"`, what `xargs`
    reads) may be any of its steps for any target: then `target` is "", `step` lists the steps, and
    `how` says why. `how` is "" for the step's own words, or says
    how the hook knew the step's script under another name (engine.hooks.renamed). A word
    only the shell knows (`$t` of a `for` loop, `"$(cat t)"`, what `xargs` reads) where a
    per-target step takes its target may be any target: then `target` is that word. The
    target names are looked at only for a command that has some step's words: most commands
    have none, and at 100,000 targets the names are most of what a hook call would read
    (engine.hooks.facts)."""
    values = {"ledger_dir": ledger_dir, "python": python}
    literals = [(step.name, [x for x in (_literal(a, values) for a in step.run or []) if x],
                 any(_PER_TARGET.search(a) for a in step.run or [])) for step in ledger.steps()]
    known: dict[str, str] | None = None  # the steps' scripts: looked for only when a command needs them

    def scripts() -> dict[str, str]:
        nonlocal known
        if known is None:
            known = renamed.scripts({t for step in ledger.steps() for a in step.run or []
                                     if (t := _rendered(a, values))}, ledger_dir)
        return known

    for command in commands:
        program, args = command.program()
        words = [program, *args]
        if handoff_args(command) is not None:
            continue
        shown = {_shown(w) for w in words}
        found = next(((name, words_of, per_target) for name, words_of, per_target in literals
                      if words_of and all(x in shown for x in words_of)), None)
        how = ""
        if found is None and (command.script_file is not None or command.code is not None
                              or any(x in shown for _, words_of, _ in literals for x in words_of)):
            seen, how = renamed.runs_one(command, scripts())
            if not seen and command.code:  # code that runs a step's script by name (`runpy.run_path('sim.py')`)
                named = code_words(command.code) + _IMPORTED.findall(command.code)
                words += named + [f"{w}.py" for w in named if w.isidentifier()]  # `import sim`, `import_module('sim')`
                shown = {_shown(w) for w in words}
                # or a copy of it (`os.system('python3 copy.py link db-19')`)
                seen, how = renamed.named([w for w in named if _shown(w) not in scripts()], command.cwd or ".", scripts())
                how = how or "the code it runs names the step's script"
            found = next(((name, words_of, per_target) for name, words_of, per_target in literals
                          if words_of and all(x in shown or x in seen for x in words_of)), None)
        if found is None:
            unknown = command.unknown + [a for a in args if XARGS_WORD in a]
            if unknown and (command.script_file is not None or command.code is not None):
                ran = renamed.runs_script(command, scripts())
                if ran:
                    steps = [name for name, words_of, _ in literals if ran & set(words_of)]
                    return ", ".join(steps), "", (f"it runs {' or '.join(sorted(ran))}, the script of runbook step"
                                                 f"{'s' if len(steps) > 1 else ''} {', '.join(steps)}, with words the "
                                                 f"hook cannot work out ({', '.join(unknown)})")
            continue
        step, words_of, per_target = found
        names = ledger.targets
        parts = {p for w in words for p in _PARTS.split(w) if p}
        hit = next((p for p in sorted(parts) if p in names), None)
        if hit is None and per_target:  # not the word naming the step's own script (`"$PWD/sim.py"`): no target
            hit = next((w for w in args if ("$" in w or "`" in w) and _shown(w) not in words_of), None)
        if hit is not None:
            return step, hit, how
    return None
