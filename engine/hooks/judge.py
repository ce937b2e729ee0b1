"""The pre-tool-use hook's verdict on a Bash command line: every part judged, the strictest wins.

Pure over (the command line, facts about the ledger): engine.hooks.pre_tool gathers the
facts and asks the guard about `handoff run`. Each simple command, at every depth
(engine.hooks.unwrap), gets one verdict:
- deny: a people-only operation in any spelling (engine.approvals.people), code that imports the
  engine, a write to the ledger or a sidecar, a lock of the ledger's held (engine.hooks.locks), a runbook step's command run raw, a
  `handoff run` the guard refuses, or nesting too deep to read;
- allow: a reading `handoff` command (GROUPS "reading" in engine.cli.main: status,
  journal, note without changes, check without --accept-*), the agent's own note through
  the reviewed path (`handoff note L --set -`), or a `handoff run` the guard allows;
- none: another `handoff` command (the engine applies its own rules), or shell syntax
  that runs nothing (`cd`, `true`);
- anything else: the ledger's `agent.unknown_commands` (allow -> none, ask, deny).
The line's answer is the strictest (deny > ask > none > allow): `allow`, which skips
Claude Code's own permission prompt, only when every part is allowed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import NamedTuple

from engine.approvals.people import people_only_words
from engine.hooks import locks, unwrap, writes
from engine.hooks.commands import handoff_args, handoff_runs, python_module
from engine.hooks.shell import Command

RANK = {"allow": 0, "none": 1, "ask": 2, "deny": 3}
READING = ("status", "journal", "note", "check")
NEUTRAL = {"cd", "pwd", "true", "false", ":", "exit", "wait", "set", "unset", "export", "declare", "typeset", "local",
           "readonly"}  # shell syntax that runs nothing (their words are still read: `cd`, assignments)
HELP = {"-h", "--help", "--version"}
ENGINE_IMPORT = re.compile(r"\b(?:import|from)\s+engine\b|(?:__import__|import_module|run_module|run_path)"
                           r"\s*\(\s*['\"]engine\b")


class Verdict(NamedTuple):
    """One answer: deny, ask, none (no objection: Claude Code's permissions apply) or allow."""

    kind: str
    reason: str = ""
    by_policy: bool = False  # a general rule (agent.unknown_commands, an unknown program): a specific reason goes first


class Facts(NamedTuple):
    """What the judge needs to know about the ledger and the call."""

    ledger_path: str  # as the hook was given it (shown in reasons)
    ledger_real: str  # its real path (what paths are compared with)
    cwd: str
    policy: str  # agent.unknown_commands


def strictest(verdicts: list[Verdict]) -> Verdict:
    """The strictest verdict (of its rank, the first with a reason of its own); `none` when there are none."""
    if not verdicts:
        return Verdict("none")
    return max(verdicts, key=lambda v: (RANK[v.kind], not v.by_policy))


def people_reason(command: str, args: list[str], ledger: str) -> str | None:
    """Why `handoff COMMAND ARGS` is for people only (with what a person runs), or None."""
    op = people_only_words(command, args)
    if op is not None:
        shown = " ".join(["handoff", command, *(a for a in args[:3])])
        return (f"{op.what} is for people: only a person may run `{shown}`. Ask one (the approvers are in "
                f"`handoff status {ledger}`): they run it from their own terminal or the TUI")
    if command == "note":
        return note_reason(args, ledger)
    return None


def note_reason(args: list[str], ledger: str) -> str | None:
    """An agent writes its own note only through the reviewed path; editing or clearing one is for people."""
    own = f"write your own handoff note with `handoff note {ledger} --set -` (the note on stdin)"
    for i, arg in enumerate(args):
        name, _, attached = arg.partition("=")
        if len(name) > 2 and "--edit".startswith(name) or name == "--clear":  # `--e`: argparse takes it for --edit
            return f"editing or clearing the handoff note is for people ({name}); {own}"
        if len(name) > 2 and "--set".startswith(name):
            value = attached if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            if value == "-":
                continue
            what = "clearing the handoff note" if not value.strip() else "a note not read from stdin"
            return f"{what} is not the reviewed path; {own}"
    return None


def names_ledger(path: str, command: Command, facts: Facts) -> bool:
    """Does `path`, as `command` names it (after the line's `cd`s, or before them), mean this ledger?"""
    return any(writes.is_ledger(facts.ledger_real, path, place) for place in {facts.cwd, command.cwd or facts.cwd})


def _handoff(args: list[str], facts: Facts) -> Verdict:
    options = args[:args.index("--")] if "--" in args else args
    if not args or any(a in HELP for a in options):
        return Verdict("allow")  # argparse prints the help and exits: nothing runs
    command, rest = args[0], args[1:]
    if "$" in command or "`" in command:
        # `handoff $(echo approve)`, `handoff "$(printf appr)ove"`: only the shell knows what this runs.
        return Verdict("deny", f"`handoff {command}` names its command at run time, and the hook cannot tell it from "
                               "`approve`; spell the command out")
    why = people_reason(command, rest, facts.ledger_path)
    if why:
        return Verdict("deny", why)
    if command in READING:
        return Verdict("allow")
    return Verdict("none")


def judge_line(line: str, facts: Facts, *, runs: Callable[[list[Command]], Verdict | None],
               raw_step: Callable[[Command], str | None]) -> Verdict:
    """The verdict on a Bash command line. `runs` judges the line's `handoff run`s against
    the guard (None when there are none); `raw_step` names a runbook step run raw."""
    parsed = unwrap.parse(line, facts.cwd)
    if parsed.too_deep:  # the strictest answer already: the rest of a huge line is not read (200k characters took 7 s)
        return Verdict("deny", f"the command nests scripts more than {unwrap.MAX_DEPTH} deep; "
                               "the hook cannot read it. Run the parts as plain commands")
    verdicts = []
    wrote = writes.writes_ledger(parsed.commands, facts.ledger_real, facts.cwd)
    if wrote:
        verdicts.append(Verdict("deny", f"{wrote}: the ledger, the files beside it and the engine's per-user files are "
                                        "written only by the engine"))
    locked = locks.locks_ledger(parsed.commands, facts.ledger_real, facts.cwd)
    if locked:
        verdicts.append(Verdict("deny", locked))
    unsure = writes.may_write(parsed.commands, facts.ledger_real, facts.cwd)
    if unsure:  # a reason of its own at the same rank goes first
        verdicts.append(Verdict("deny", f"{unsure}: the ledger, the files beside it and the engine's per-user files are "
                                         "written only by the engine", by_policy=True))
    for program, code in parsed.code:
        verdicts += _code(program, code, facts)
    handoff_run_found = runs(parsed.commands)
    if handoff_run_found is not None:
        verdicts.append(handoff_run_found)
    for command in parsed.commands:
        verdicts.append(_command(command, facts, raw_step, handoff_run_found is not None))
    return strictest(verdicts)


def _command(command: Command, facts: Facts, raw_step: Callable[[Command], str | None], ran: bool) -> Verdict:
    args = handoff_args(command)
    if args is not None:
        if args[:1] == ["run"]:
            # Judged against the guard as a whole (`runs`); a run of another ledger is not ours to judge.
            ours = [r for r in handoff_runs([command]) if names_ledger(r.ledger, command, facts)]
            return Verdict("allow") if ours and ran else Verdict("none")
        return _handoff(args, facts)
    module = python_module(command)
    if module is not None and (module == "engine" or module.startswith("engine.")):
        return Verdict("deny", f"`python -m {module}` runs the engine's code directly; use the `handoff` command")
    step = raw_step(command)
    if step:
        return Verdict("deny", step)
    program, rest = command.program()
    if program.startswith(("$", "`")) and rest:
        # A program chosen at run time (`$H approve ...`): its words still say what it is for.
        why = people_reason(rest[0], rest[1:], facts.ledger_path)
        if why:
            return Verdict("deny", f"`{program}` is chosen at run time and runs `{rest[0]}`: {why}")
    if command.container or not program or program in NEUTRAL:
        return Verdict("none")
    if facts.policy == "deny":
        return Verdict("deny", f"this ledger allows the agent only `handoff` commands (agent.unknown_commands: deny); "
                               f"`{program}` is not one", by_policy=True)
    if facts.policy == "ask":
        return Verdict("ask", f"`{program}` is not a runbook step; this ledger asks a person first "
                              "(agent.unknown_commands: ask)", by_policy=True)
    return Verdict("none")


def _code(program: str, code: str, facts: Facts) -> list[Verdict]:
    out = []
    if program.startswith("python") and ENGINE_IMPORT.search(code):
        out.append(Verdict("deny", f"{program} code that imports the engine can do what only people may; "
                                   "use the `handoff` command (people-only operations are refused to agents)"))
    tokens = unwrap.code_words(code)
    for i, token in enumerate(tokens):
        if os.path.basename(token) == "handoff" and i + 1 < len(tokens):
            why = people_reason(tokens[i + 1], tokens[i + 2:], facts.ledger_path)
            if why:
                out.append(Verdict("deny", f"{program} code runs `handoff {tokens[i + 1]}`: {why}"))
    if locks.code_locks(code, facts.ledger_real):
        out.append(Verdict("deny", f"{program} code names {os.path.basename(facts.ledger_real)} and takes a lock: "
                                   f"a lock of the ledger's, {locks.WHY}"))
    if writes.code_writes_protected(code, facts.ledger_real):
        out.append(Verdict("deny", f"{program} code names {os.path.basename(facts.ledger_real)} or the engine's per-user "
                                   "files and writes a file: they are written only by the engine"))
    return out
