"""Bad input, round three (a sweep of every `handoff` command): what each one did wrong,
checked through the real CLI: no hang, no traceback, the message, and the ledger's bytes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_env

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code" / "PreToolUse.json"


def run(tmp_path: Path, *args, input: str = "", timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          input=input, timeout=timeout, cwd=str(tmp_path),
                          env=cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache")))


def test_a_claude_code_hook_on_a_fifo_denies_at_once(tmp_path):
    """The hook's quick read of the ledger (engine.hooks.facts) opened a FIFO plainly and waited
    for a writer forever: Claude Code's own timeout then lets the tool call through. It is
    refused at once (fail closed) with what is wrong, and the FIFO is left as it was."""
    os.mkfifo(tmp_path / "ledger.yaml")
    data = json.loads(FIXTURE.read_text())
    data.update(cwd=str(tmp_path), tool_input={"command": "ls"})
    result = run(tmp_path, "hook", "pre-tool-use", tmp_path / "ledger.yaml", input=json.dumps(data), timeout=20)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", answer
    assert "is a FIFO (named pipe), not a regular file" in answer["permissionDecisionReason"], answer
    assert stat.S_ISFIFO(os.lstat(tmp_path / "ledger.yaml").st_mode)


def test_a_target_with_nothing_after_its_name_is_queued_with_a_parse_cache(tmp_path):
    """`db-21:` alone is a queued target (docs/ledger.md); the parse cache's save walked its
    None as a list, and every command showed a TypeError traceback where the cache is writable."""
    path = tmp_path / "ledger.yaml"
    text = "task: t\ntargets:\n  a:\n  b: {state: queued}\n"
    path.write_text(text)
    for args in (("check", path), ("status", path, "--json")):
        result = run(tmp_path, *args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (args, result.stderr)
        assert path.read_text() == text
    assert json.loads(result.stdout)["targets"]["a"]["state"] == "queued"


def test_the_report_of_a_ledger_without_a_runbook(tmp_path):
    """A ledger with no runbook is valid (viewable); `handoff report` read `runbook.steps` of
    None and showed an AttributeError traceback. It reports (nothing irreversible ran)."""
    path = tmp_path / "ledger.yaml"
    text = "task: t\ntargets:\n  a: {state: queued}\n"
    path.write_text(text)
    assert run(tmp_path, "note", path, "--set", "x").returncode == 0  # a journal to report on
    text = path.read_text()
    for form in ("csv", "json"):
        result = run(tmp_path, "report", path, "--format", form)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert path.read_text() == text
    assert json.loads(result.stdout)


EDITORS = {
    # $EDITOR as a tired operator leaves it: the words of the one-line message, exit 2
    "not_installed": ("/nonexistent/vim", ["cannot run /nonexistent/vim", "set VISUAL or EDITOR"]),
    "unclosed_quote": ('vim "', ["names no command", "set VISUAL or EDITOR"]),
    "blank": (" ", ["names no command", "set VISUAL or EDITOR"]),
    "saves_latin1": ("sh -c 'printf \"caf\\351\" > \"$0\"'", ["is not UTF-8 (byte 3)", "save it as UTF-8"]),
}


@pytest.mark.parametrize("case", sorted(EDITORS))
def test_note_edit_with_a_bad_editor_is_one_line_and_changes_nothing(tmp_path, case):
    """`note --edit` with $EDITOR wrong showed FileNotFoundError, ValueError, PermissionError
    (a blank one ran the note's temporary file) or UnicodeDecodeError tracebacks."""
    editor, words = EDITORS[case]
    path = tmp_path / "ledger.yaml"
    path.write_text("task: t\ntargets:\n  a: {state: queued}\nhandoff_note: first\n")
    before = sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"), EDITOR=editor)
    env.pop("VISUAL", None)
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "note", str(path), "--edit"], capture_output=True,
                            text=True, timeout=30, cwd=str(tmp_path), env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stdout + result.stderr
    err = result.stderr
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("handoff: "), err
    assert all(w in err for w in words) and "the note was not changed" in err, err
    assert path.read_bytes() == before[1]
    assert [n for n in sorted(p.name for p in tmp_path.iterdir()) if n not in ("state", "cache", "ledger.yaml.lock")] == \
        [n for n in before[0] if n not in ("state", "cache")]
