"""A ledger given positionally or with `--ledger`, for the commands that took only `--ledger`.

`handoff resume LEDGER` and `handoff hook EVENT LEDGER` read as every other command
does; `--ledger LEDGER` keeps working (cron lines and Claude Code settings use it).
"""

from __future__ import annotations

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
