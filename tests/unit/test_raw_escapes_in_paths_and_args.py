"""Text from outside (a file name, an argument) is data: the one-line errors must not put
raw escape sequences on the operator's terminal. `handoff check` already shows such a
path as `\\x1b...`; the parse error, "no such ledger file", "is a folder" and argparse's
"unrecognized arguments" print it raw (an OSC retitles the terminal, `ESC[2J` clears it)."""

from __future__ import annotations

import pytest

from tests.conftest import handoff

EVIL = "\x1b]0;pwn\x07\x1b[2J"


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text)


@pytest.mark.parametrize("case", ["parse-error", "missing", "folder"])
def test_a_ledger_path_with_escapes_is_shown_escaped(tmp_path, case):
    path = tmp_path / f"bad{EVIL}.yaml"
    if case == "parse-error":
        path.write_text("task: t\ntargets:\n  a: {state: nope}\n")
    elif case == "folder":
        path.mkdir()
    result = handoff("status", path)
    assert result.returncode == 2, result.stderr
    _clean(result.stderr + result.stdout)


def test_an_unknown_argument_with_escapes_is_shown_escaped(fleet):
    before = fleet.read_bytes()
    result = handoff("approve", fleet, "db-1", f"--x{EVIL}")
    assert result.returncode == 2, result.stderr
    _clean(result.stderr + result.stdout)
    assert fleet.read_bytes() == before
