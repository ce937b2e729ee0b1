"""`handoff --help` groups the commands by what an on-call engineer is doing, and every
command and every option says what it is for."""

from __future__ import annotations

import argparse
import subprocess
import sys

from engine.cli.main import COMMAND_MODULES, GROUPS, build_parser
from tests.conftest import ROOT, handoff


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


def test_one_command_built_alone_parses_and_helps_as_in_the_whole_parser():
    """`main` builds only the command it was asked for: that parser's help, and what it
    makes of a call, are the whole parser's."""
    whole = build_parser()
    for name, command in _subparsers().items():
        alone = build_parser(only=name)
        action = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction))
        assert list(action.choices) == [name]
        assert action.choices[name].format_help() == command.format_help(), name
    argv = ["approve", "ledger.yaml", "db-18", "--step", "cutover"]
    one, every = vars(build_parser(only="approve").parse_args(argv)), vars(whole.parse_args(argv))
    assert one.pop("handler").__code__ is every.pop("handler").__code__  # a lambda made again per build
    assert one == every


def test_each_command_is_built_from_its_own_module_alone():
    """The table `main` imports one command's module by names every command, in the whole
    parser's order, and building a command alone imports no command module that its own
    module's registration does not import itself."""
    assert [n for _, names in COMMAND_MODULES for n in names] == list(_subparsers())
    loaded = "print(' '.join(m for m, _ in COMMAND_MODULES if 'engine.cli.' + m in sys.modules))"
    for module, names in COMMAND_MODULES:
        alone = f"build_parser(only={names[0]!r})"
        registered = f"import argparse, engine.cli.{module} as m; m.register(argparse.ArgumentParser().add_subparsers())"
        built, imported = (subprocess.run([sys.executable, "-c", f"import sys; from engine.cli.main import COMMAND_MODULES, "
                                           f"build_parser; {step}; {loaded}"], capture_output=True, text=True, cwd=ROOT)
                           for step in (alone, registered))
        assert built.returncode == 0 and imported.returncode == 0, built.stderr + imported.stderr
        assert module in built.stdout.split() and built.stdout == imported.stdout, names[0]


def test_a_mistyped_command_is_named_against_every_command():
    result = handoff("statsu", "ledger.yaml")
    assert result.returncode == 2
    assert "invalid choice: 'statsu'" in result.stderr and "'status'" in result.stderr and "'approve'" in result.stderr
