"""Arguments several commands share: the ledger (positional or `--ledger`), -q/-v, an
`-o FILE`, and opening the ledger they name.

A ledger given positionally or with `--ledger`, for the commands that took only `--ledger`:

`handoff resume LEDGER` and `handoff hook EVENT LEDGER` read as every other command
does; `--ledger LEDGER` keeps working (cron lines and Claude Code settings use it).
"""

from __future__ import annotations

import argparse

from engine.errors import UsageError

HELP = "the ledger file (or its postgresql://host/db#name location)"


def add(parser, help: str = HELP) -> None:  # noqa: A002 - argparse's own word
    """LEDGER as an optional positional, and --ledger LEDGER, one of which is required."""
    parser.add_argument("ledger_pos", nargs="?", metavar="LEDGER", help=help)
    parser.add_argument("--ledger", help=f"{help} (the same as LEDGER)")


def resolved(handler):
    """`handler` with `args.ledger` set from whichever form was given (a usage error if none, or two that differ)."""
    def run(args) -> int:
        given = [v for v in (args.ledger_pos, args.ledger) if v]
        if not given:
            raise UsageError("say which ledger: LEDGER (or --ledger LEDGER)")
        if len(set(given)) > 1:
            raise UsageError(f"two ledgers given ({given[0]} and {given[1]}); give one")
        args.ledger = given[0]
        return handler(args)

    run.__doc__ = handler.__doc__
    return run


def output_file(text: str) -> str:
    """An `-o FILE` value: a file name, never empty (`-o "$OUT"` with OUT unset names no file;
    printing instead would send the output where the caller did not ask)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("names no file; give a file name, or leave -o out to print (nothing was written)")
    return text


def add_verbosity(parser, *, sub: bool = False) -> None:
    """-q/--quiet and -v/--verbose, before the command or (`sub`) after it."""
    keep = {"default": argparse.SUPPRESS} if sub else {"default": 0}  # a command's own never resets the global one
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=-1, **keep,
                       help="a session prints only what needs a person: warnings, errors, refusals, drift, how it ended")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=1, **keep,
                       help="a session also prints what it only journals: metric readings, step output")


def open_handle(args, *, read_only: bool = False):
    """The ledger `args.ledger` names, opened through engine.api as `args.actor`; remembered on
    `args.handles` so main() can say what waking a workflow said."""
    from engine.api import open_ledger

    handle = open_ledger(args.ledger, actor=getattr(args, "actor", None), read_only=read_only)
    args.handles = [*getattr(args, "handles", ()), handle]
    return handle
