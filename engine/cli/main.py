"""`handoff`: the engine's command line.

A stable contract (later work and outside tests rely on it): command names, flags and
exit codes are as the ledger-engine issue fixes them. Exit 2 with a one-line reason for
every usage error or unreadable ledger; a user's mistake never shows a traceback.
Imports are lazy so that `handoff status` pays only for what it uses.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import NoReturn, cast

from engine.cli import arguments
from engine.codec.textsafe import visible
from engine.errors import HandoffError

EXIT_CODES = """exit codes of `handoff resume`:
  0  handed off cleanly, nothing left, or only people can move it
  2  usage, invalid ledger, or it can never proceed as written
  3  the ledger and reality disagree
  4  paused by an invariant or an operator
  5  another live holder has the lease
  6  a service the session needs stayed unavailable (the ledger's database, the planner's API)
exit codes of `handoff run` (one guarded step):
  0  it ran and succeeded       1  nothing ran (refused, or now awaiting approval)
  2  usage, invalid ledger, or no single step allowed      3  the probe disagrees
  4  paused     5  another holder has the lease     7  it ran and failed
other commands: 0 done, 1 refused (or not fully recorded), 2 usage or unreadable ledger"""


class _Version(argparse.Action):
    """`--version`, reading the package metadata only when asked (it costs every call 15 ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from engine.version import version

        print(f"handoff {version()}")
        parser.exit(0)


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line (its default prints usage, then exits 2)."""

    def error(self, message: str) -> NoReturn:  # noqa: D401 - argparse hook
        self.exit(2, f"handoff: {visible(message)} (see `{visible(self.prog)} --help`)\n")  # a word given is data


# `handoff --help` lists the commands by what an on-call engineer is doing.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reading", ("status", "journal", "note", "check", "report", "show", "diff")),
    ("approving", ("approve", "unapprove", "reject", "slack")),
    ("running", ("resume", "run", "stop", "pause", "unpause", "worker")),
    ("repairing", ("retry", "block", "unblock", "reconcile")),
    ("setting up", ("init", "claude", "schema", "import", "export", "completion", "info")),
    ("hooks", ("hook",)),
)


class _Unused:
    """The parser of a command that was not asked for: whatever it is given is dropped."""

    def __getattr__(self, name: str):
        return self._drop

    def _drop(self, *args, **kwargs) -> _Unused:
        return self


class _Commands(argparse._SubParsersAction):
    """The command list; with `only` set, only that command's parser is built (the other
    thirty, with their hundred arguments, cost every call about 8 ms)."""

    only: str | None = None

    def add_parser(self, name, **kwargs):
        if self.only is not None and name != self.only:
            return _Unused()
        return super().add_parser(name, **kwargs)


# The modules that register the commands, in the order `--help` and a usage error list
# them, and which one registers each command: an ordinary call imports only its own (the
# other ten, with what they import, cost a Claude Code hook call, made on every tool call,
# about 5 ms of its 80). tests/unit/test_help.py builds each command alone against the whole.
COMMAND_MODULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("commands", ("check", "status", "approve", "unapprove", "reject", "note", "pause", "unpause", "retry", "block",
                  "unblock", "journal", "schema")),
    ("pg_cmds", ("import", "export")),
    ("session_cmds", ("resume", "stop", "reconcile")),
    ("run_cmd", ("run",)),
    ("claude_cmds", ("hook", "claude")),
    ("init_cmd", ("init",)),
    ("temporal_cmds", ("worker",)),
    ("completion_cmd", ("completion",)),
    ("info_cmd", ("info",)),
    ("report_cmd", ("report", "show", "diff")),
    ("slack_cmd", ("slack",)),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """`handoff`'s parser, every command in it; with `only`, that command's alone (what
    `main` parses an ordinary call with: the help and the usage errors need them all)."""
    import importlib

    parser = _Parser(prog="handoff", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES,
                     description="Ledger-first execution: the engine's command line. "
                                 "`handoff COMMAND --help` says more about each.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    arguments.add_verbosity(parser)
    parser.register("action", "commands", _Commands)
    sub = cast(_Commands, parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, action="commands"))
    sub.only = only
    sub.required = True
    own = [module for module, names in COMMAND_MODULES if only in names]
    for module in own or [module for module, _ in COMMAND_MODULES]:
        importlib.import_module(f"engine.cli.{module}").register(sub)
    if only is None:
        _group_commands(parser, sub)
    elif only in sub.choices:
        command = sub.choices[only]
        if command.description is None:  # as _group_commands says it
            command.description = next((a.help for a in sub._choices_actions if a.dest == only), None)
    return parser


def _group_commands(parser: argparse.ArgumentParser, sub) -> None:
    """Replace argparse's flat command list with the groups; a command no group names
    (one added later) is listed under "other", never lost."""
    import textwrap

    helps = {action.dest: action.help or "" for action in sub._choices_actions}  # argparse keeps them nowhere public
    width = max(len(name) for name in helps) + 4
    lines = []
    for title, names in GROUPS + (("other", tuple(n for n in helps if not any(n in g for _, g in GROUPS))),):
        present = [n for n in names if n in helps]
        if present:
            lines.append(f"{title}:")
            lines += [textwrap.fill(helps[n], 79, initial_indent=f"  {n:<{width - 2}}", subsequent_indent=" " * width)
                      for n in present]
    from engine.settings import describe

    parser.epilog = "\n".join(lines) + "\n\n" + EXIT_CODES + "\n" + describe() + "\n"
    parser.usage = "handoff COMMAND [ARGS]   (handoff COMMAND --help for each)"
    sub.help = argparse.SUPPRESS
    for name, command in sub.choices.items():
        if command.description is None:
            command.description = helps.get(name)  # `handoff init --help` opens with what it is for


# Commands that read their ledger first and end: the cyclic collector stays off through their
# imports until that read is over (engine.store.bulk.off_until_read). Not the ones that may run
# long before a read, or never read (resume, worker, slack, journal --follow, hook).
READ_FIRST = frozenset({"status", "check", "note", "approve", "unapprove", "reject", "pause", "unpause", "retry",
                        "block", "unblock"})


def main(argv: list[str] | None = None) -> int:
    from engine.store import bulk

    argv = sys.argv[1:] if argv is None else argv
    if next((a for a in argv if not a.startswith("-")), None) in READ_FIRST:
        bulk.off_until_read()
    try:
        return _main(argv)
    finally:
        bulk.settle()  # no read came (an error, a usage message): on again for a process that goes on


def _main(argv: list[str]) -> int:
    for position, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            # Bytes that are not UTF-8 arrive as lone surrogates; YAML and the journal
            # cannot hold them, so refuse before anything is read or written.
            print(f"handoff: argument {position} is not valid UTF-8 text; nothing was changed", file=sys.stderr)
            return 2
    from engine.cli.completion_cmd import asked, complete

    # The first word that is no option names the command (`handoff` takes no option with a value).
    word = None if asked() else next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only=word)
    if word is not None and not any(word in a.choices for a in parser._actions if isinstance(a, _Commands)):
        parser = build_parser()  # no such command: the error names the ones there are
    complete(parser)  # a shell asking for completions (TAB) is answered here, and nothing else runs
    args = parser.parse_args(argv)
    if getattr(args, "verbosity", 0):
        from engine.session import out

        out.VERBOSITY = args.verbosity
    try:
        code = args.handler(args)
        for handle in getattr(args, "handles", ()):  # a Temporal workflow holding the ledger is woken
            if handle.woke:
                print(visible(handle.woke), file=sys.stderr)
    except HandoffError as err:
        from engine.audit.redact import redact  # only a failing call pays for the rules

        print(f"handoff: {visible(redact(str(err)))}", file=sys.stderr)  # a path or name in it is data
        code = err.exit_code
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0  # `handoff journal | head` is fine
    except OSError as err:
        if err.errno not in _CANNOT_WRITE:
            raise
        code = _output_lost(err)
    return int(code or 0)


_CANNOT_WRITE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _output_lost(err: OSError) -> int:
    """The output could not be written (`> /dev/full`, a full disk or quota): one line, no
    traceback, exit 1. What the command recorded before it printed stays recorded, so the line
    says to look (`handoff status`), never that nothing changed."""
    from engine.errors import os_error_text

    try:  # what is still buffered goes nowhere, or the interpreter's exit would fail on it again
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
    try:
        print(f"handoff: could not write the output ({os_error_text(err)}); a change the command made is "
              "recorded all the same (`handoff status` shows the ledger)", file=sys.stderr)
    except OSError:
        pass
    return 1


_CODE: list[int] = []  # what main() returned, for _leave


def run() -> int:
    """`handoff` as a program (the console script, `python -m engine.cli.main`): main(), and at
    the interpreter's exit no teardown. Freeing every object one by one (10,000 targets'
    models and dicts) and the last collection cost `status` at 10,000 targets ~10 ms after
    its output is written; the exit handlers registered while it ran (logging's, a thread
    pool's) still run first: `_leave` was registered before them, and they run in reverse
    order. Not when a handler was registered before ours (coverage's, say): ours would run
    before it and skip it."""
    import atexit

    count = getattr(atexit, "_ncallbacks", None)
    if count is not None and count() == 0:
        atexit.register(_leave)
    code = main()
    _CODE.append(code)
    return code


def _leave() -> None:
    """The last exit handler: flush what is printed and end the process with main()'s code,
    without the interpreter's teardown. main() that raised (a usage error's SystemExit, a
    traceback), or a stream that cannot be flushed: the usual exit, which says so as before."""
    if not _CODE:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # the usual exit reports it
        return
    import os

    os._exit(_CODE[0])


if __name__ == "__main__":
    sys.exit(run())
