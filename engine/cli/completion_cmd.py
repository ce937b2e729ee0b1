"""`handoff completion bash|zsh|fish`: the shell completion script, printed.

    eval "$(handoff completion bash)"          # in ~/.bashrc (zsh: the same in ~/.zshrc)
    handoff completion fish > ~/.config/fish/completions/handoff.fish

argcomplete (not shtab) because fish is one of the shells asked for, and because it
completes from the running program: command names, flags, and target names read from
the ledger named earlier on the line. `main` hands a completion request to `complete`
before anything else runs; argcomplete is imported only then, so ordinary commands pay
nothing for it.
"""

from __future__ import annotations

import os
import sys

SHELLS = ("bash", "zsh", "fish")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print the shell completion script (bash, zsh or fish) to source or install")
    p.add_argument("shell", choices=SHELLS, help="which shell's script")
    p.set_defaults(handler=cmd_completion)


def cmd_completion(args) -> int:
    """Print the script argcomplete writes for `handoff` in this shell."""
    from argcomplete import shellcode

    sys.stdout.write(shellcode(["handoff"], shell=args.shell))
    return 0


def targets(prefix: str, parsed_args, **_kw) -> list[str]:
    """Target names of the ledger given earlier on the command line that start with `prefix`."""
    path = getattr(parsed_args, "ledger", None)
    if not path:
        return []
    try:
        from engine.api import open_ledger

        names = open_ledger(path, read_only=True).load().targets
    except Exception:  # noqa: BLE001 - a completion must never print a traceback into the shell
        return []
    return [n for n in names if n.startswith(prefix)]


def asked() -> bool:
    """Is this call a shell asking for completions (it sets _ARGCOMPLETE)?"""
    return "_ARGCOMPLETE" in os.environ


def complete(parser) -> None:
    """Answer a completion request and exit; return at once otherwise."""
    if not asked():
        return
    import argcomplete

    for action in _target_actions(parser):
        action.completer = targets
    argcomplete.autocomplete(parser)


def _target_actions(parser):
    """Every positional `target` argument of every subcommand."""
    import argparse

    for action in parser._actions:  # argparse keeps subparsers nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                yield from (a for a in command._actions if a.dest == "target" and not a.option_strings)
