"""Invisible characters in a command (tag characters, the soft hyphen, the combining
grapheme joiner, Hangul fillers, variation selectors, zero-width and bidi controls)
are shown as visible escapes wherever a command is shown, from one function
(engine.codec.textsafe.visible): the CLI's approve prompt and `handoff status` here, the TUI's
approval dialog in tests/tui/test_invisible.py."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import yaml

from engine.codec.textsafe import visible
from tests.conftest import ROOT, cli_env, handoff

# "--force" hidden in tag characters, a soft hyphen, a CGJ, Hangul fillers, variation selectors, a bidi override.
HIDDEN = ("\U000e002d\U000e002d\U000e0066", "\u00ad", "\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\ufe0f",
          "\U000e0100", "\u200b", "\u202e")
ARG = "db" + "".join(HIDDEN) + "-1"


def _ledger(tmp_path: Path) -> Path:
    data = {"task": "hidden", "targets": {"a": {"state": "awaiting_approval", "awaiting": "link", "awaiting_by": "agent"}},
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "linked", "reversible": False,
                                   "run": ["echo", ARG]}]}}
    path = tmp_path / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _shown_escaped(text: str) -> None:
    for char in HIDDEN:
        for c in char:
            assert c not in text, f"U+{ord(c):04X} reached the terminal raw"
    for escape in ("\\U000e002d", "\\xad", "\\u034f", "\\u115f", "\\u1160", "\\u3164", "\\uffa0", "\\ufe0f",
                   "\\U000e0100", "\\u200b", "\\u202e"):
        assert escape in text, escape


def test_the_one_function_escapes_every_invisible_kind():
    assert visible(ARG) == ("db\\U000e002d\\U000e002d\\U000e0066\\xad\\u034f\\u115f\\u1160\\u3164\\uffa0\\ufe0f"
                            "\\U000e0100\\u200b\\u202e-1")
    assert visible("db\U000e0041", pictures=True) == "db<U+E0041>"
    assert visible("Zürich 数据库 😀") == "Zürich 数据库 😀"  # text stays text


def test_handoff_status_shows_the_awaiting_command_with_escapes(tmp_path):
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    status = handoff("status", ledger, env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
    assert status.returncode == 0, status.stderr
    assert "would run: echo" in status.stdout
    _shown_escaped(status.stdout)
    assert ledger.read_bytes() == before


def test_the_approve_prompt_on_a_terminal_shows_escapes(tmp_path):
    """`handoff approve` on a real pty: the argv it asks about has every hidden character spelled out; a wrong
    name approves nothing."""
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "a", "--as", "human-1"],
                            stdin=child, stdout=child, stderr=child, env=env, cwd=str(ROOT), close_fds=True)
    os.close(child)
    seen = b""
    while b"to approve it" not in seen:
        ready, _, _ = select.select([main], [], [], 30)
        assert ready, seen
        seen += os.read(main, 65536)
    os.write(main, b"nope\n")
    while True:
        ready, _, _ = select.select([main], [], [], 30)
        try:
            chunk = os.read(main, 65536) if ready else b""
        except OSError:
            break  # the child closed the terminal
        if not chunk:
            break
        seen += chunk
    assert proc.wait(30) == 1
    os.close(main)
    text = seen.decode("utf-8")
    assert "IRREVERSIBLE" in text
    _shown_escaped(text)
    assert ledger.read_bytes() == before
