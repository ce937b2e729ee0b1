"""`handoff hook EVENT --ledger LEDGER` and `handoff claude init LEDGER`: Claude Code drives the ledger."""

from __future__ import annotations

import os
import sys

from engine.cli import arguments
from engine.hooks import EVENTS


def register(sub) -> None:
    p = sub.add_parser("hook", help="answer one of Claude Code's hooks (reads its JSON on stdin; `handoff claude init` wires them)")
    p.add_argument("event", choices=EVENTS, help="which hook")
    arguments.add(p, help="the ledger the Claude Code session works on")
    p.set_defaults(handler=arguments.resolved(cmd_hook))

    p = sub.add_parser("claude", help="set a project's Claude Code up to drive a ledger (`claude init`)")
    verbs = p.add_subparsers(dest="verb", metavar="init", help="the one thing to do: init")
    init = verbs.add_parser("init", help="write the hooks into .claude/settings.json and a section into CLAUDE.md")
    init.add_argument("ledger", help="the ledger the project's Claude Code sessions drive")
    init.add_argument("--project", default=".", help="the project folder (default: here)")
    init.add_argument("--check", action="store_true", help="only say whether what is installed matches (exit 0 or 1)")
    init.set_defaults(handler=cmd_claude_init)
    verbs.required = True


def cmd_hook(args) -> int:
    from engine.hooks.protocol import run

    return run(args.event, args.ledger, sys.stdin, sys.stdout)


def cmd_claude_init(args) -> int:
    from engine.api import open_ledger
    from engine.codec.textsafe import visible
    from engine.hooks import claude_init

    open_ledger(args.ledger, read_only=True)  # a clear error now if the ledger is not there or not valid
    if args.check:
        problems = claude_init.check(args.ledger, args.project)
        for line in problems or ["the hooks and the CLAUDE.md section match this ledger"]:
            print(visible(line))
        return 1 if problems else 0
    for line in claude_init.install(args.ledger, args.project):
        print(visible(line))
    print(visible(f"next: cd {os.path.abspath(args.project)} && claude"))
    return 0
