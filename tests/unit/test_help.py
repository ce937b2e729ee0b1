"""`handoff --help` groups the commands by what an on-call engineer is doing, and every
command and every option says what it is for."""

from __future__ import annotations

import argparse

from engine.cli.main import GROUPS, build_parser
from tests.conftest import handoff


def test_help_groups_every_command():
    """reading, approving, running, repairing (and setting up): each command listed once."""
    result = handoff("--help")
    assert result.returncode == 0
    text = result.stdout
    for title in ("reading:", "approving:", "running:", "repairing:", "setting up:"):
        assert f"\n{title}\n" in text
    assert text.index("approving:") < text.index("  approve ") < text.index("running:")
    assert text.index("repairing:") < text.index("  reconcile ") < text.index("setting up:")
    commands = _subparsers()
    listed = [line.split()[0] for line in text.split("\n") if line.startswith("  ") and not line.startswith("   ")]
    assert sorted(c for c in listed if c in commands) == sorted(commands)
    assert "other:" not in text  # a command no group names would show up here


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_and_option_has_help():
    """No bare argument in any `--help`: each says what it does."""
    bare = []
    for name, command in _subparsers().items():
        if not command.description:
            bare.append(name)
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help:
                bare.append(f"{name} {action.dest}")
    assert bare == []


def test_the_groups_name_only_real_commands():
    commands = _subparsers()
    assert [n for _, names in GROUPS for n in names if n not in commands] == []
