"""Every flag `--help` shows is documented: docs/ledger.md or docs/operating.md names it beside its command."""

from __future__ import annotations

import argparse
import re

from engine.cli.main import build_parser
from tests.conftest import ROOT

DOCS = "\n".join((ROOT / "docs" / name).read_text(encoding="utf-8") for name in ("ledger.md", "operating.md"))


def _flags(parser: argparse.ArgumentParser, prefix: str):
    """(command path, long flag) for every option of every (sub)command."""
    for action in parser._actions:  # argparse keeps subparsers nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from _flags(command, f"{prefix} {name}".strip())
        elif action.option_strings and action.help != argparse.SUPPRESS and prefix:
            longest = max(action.option_strings, key=len)
            if longest not in ("--help",):
                yield prefix, longest


def _documented(command: str, flag: str) -> bool:
    """Some line of the docs names the command's last word and the flag."""
    word = command.split()[-1]
    return any(flag in line and re.search(rf"\b{re.escape(word)}\b", line) for line in DOCS.splitlines())


def test_every_flag_of_every_command_is_in_the_docs() -> None:
    missing = [f"handoff {c} {f}" for c, f in _flags(build_parser(), "") if not _documented(c, f)]
    assert not missing, "not in docs/ledger.md or docs/operating.md: " + ", ".join(missing)


def test_handoff_tui_flags_are_in_the_docs() -> None:
    """The screen's own flags, read from its --help as a user sees them."""
    import subprocess
    import sys

    shown = subprocess.run([sys.executable, "-m", "tui.main", "--help"], capture_output=True, text=True, timeout=60,
                           cwd=str(ROOT), env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", shown)) - {"--help"})
    assert "--theme" in flags
    missing = [f for f in flags if not any(f in line and "handoff-tui" in line for line in DOCS.splitlines())]
    assert not missing, "handoff-tui flags not in the docs: " + ", ".join(missing)
