"""`handoff claude init LEDGER [--project DIR] [--check]`: hooks written or merged, nothing of the
project's lost, a CLAUDE.md section created or replaced, and a settings file it cannot read left alone."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import RUNBOOK_LEDGER, handoff


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "proj"
    project.mkdir()
    ledger = tmp_path / "ops" / "ledger.yaml"
    ledger.parent.mkdir()
    ledger.write_text(RUNBOOK_LEDGER)
    return project, ledger


def test_init_writes_every_hook_by_absolute_paths(tmp_path: Path) -> None:
    """Seven events (StopFailure too), each calling `handoff hook EVENT --ledger /abs/ledger.yaml`, tool events matching every tool."""
    project, ledger = _project(tmp_path)
    result = handoff("claude", "init", str(ledger), "--project", str(project))
    assert result.returncode == 0, result.stderr
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "Stop", "StopFailure", "SessionEnd"}
    assert shlex.split(hooks["StopFailure"][0]["hooks"][0]["command"])[-4:-2] == ["hook", "stop-failure"]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    words = shlex.split(command)
    assert words[0].startswith("/") and words[-4:] == ["hook", "pre-tool-use", "--ledger", str(ledger.resolve())]
    assert hooks["PreToolUse"][0]["matcher"] == "*" and hooks["PreToolUse"][0]["hooks"][0]["timeout"] > 0
    assert "SessionStart" in result.stdout and "CLAUDE.md" in result.stdout
    assert f"`handoff run {ledger.resolve()} TARGET [STEP]`" in (project / "CLAUDE.md").read_text()
    assert handoff("claude", "init", str(ledger), "--project", str(project), "--check").returncode == 0


def test_init_keeps_every_existing_setting_and_hook_and_replaces_only_its_own(tmp_path: Path) -> None:
    """The project's own permissions, env and hooks stay; a second init changes nothing; CLAUDE.md text outside the markers stays."""
    project, ledger = _project(tmp_path)
    (project / ".claude").mkdir()
    mine = {"permissions": {"allow": ["Bash(ls:*)"], "deny": ["WebFetch", "Task"]}, "env": {"FOO": "1"},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-hook"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(mine))
    (project / "CLAUDE.md").write_text("# Team notes\nUse tabs.\n")
    assert handoff("claude", "init", str(ledger), "--project", str(project)).returncode == 0
    again = handoff("claude", "init", str(ledger), "--project", str(project))
    assert "nothing to change" in again.stdout
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == {"allow": ["Bash(ls:*)"], "deny": ["WebFetch", "Task", "Agent"]}
    assert settings["env"] == {"FOO": "1"}
    pre = settings["hooks"]["PreToolUse"]
    assert pre[0] == mine["hooks"]["PreToolUse"][0] and len(pre) == 2
    memo = (project / "CLAUDE.md").read_text()
    assert memo.startswith("# Team notes\nUse tabs.\n") and memo.count("handoff:begin") == 1


def test_check_reports_a_missing_or_changed_hook(tmp_path: Path) -> None:
    """--check: exit 1 naming what differs; after init, exit 0."""
    project, ledger = _project(tmp_path)
    missing = handoff("claude", "init", str(ledger), "--project", str(project), "--check")
    assert missing.returncode == 1 and "PreToolUse" in missing.stdout
    assert handoff("claude", "init", str(ledger), "--project", str(project)).returncode == 0
    settings_path = project / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["hooks"]["Stop"] = []
    settings_path.write_text(json.dumps(settings))
    changed = handoff("claude", "init", str(ledger), "--project", str(project), "--check")
    assert changed.returncode == 1 and "Stop" in changed.stdout


def test_subagents_are_denied_and_check_notices_when_they_are_not(tmp_path: Path) -> None:
    """Subagent tool calls may skip PreToolUse: init denies Agent and Task; --check fails once a person removes that."""
    project, ledger = _project(tmp_path)
    assert handoff("claude", "init", str(ledger), "--project", str(project)).returncode == 0
    settings_path = project / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    assert settings["permissions"]["deny"] == ["Agent", "Task"]
    settings["permissions"]["deny"] = ["Task"]
    settings_path.write_text(json.dumps(settings))
    check = handoff("claude", "init", str(ledger), "--project", str(project), "--check")
    assert check.returncode == 1 and "permissions.deny: Agent missing" in check.stdout


def test_a_settings_file_that_is_not_json_is_never_overwritten(tmp_path: Path) -> None:
    """Exit 2 with the file named and what to do; its bytes unchanged; no CLAUDE.md written."""
    project, ledger = _project(tmp_path)
    (project / ".claude").mkdir()
    bad = b'{"hooks": {,}'
    (project / ".claude" / "settings.json").write_bytes(bad)
    result = handoff("claude", "init", str(ledger), "--project", str(project))
    assert result.returncode == 2 and "settings.json is not valid JSON" in result.stderr and "nothing was changed" in result.stderr
    assert (project / ".claude" / "settings.json").read_bytes() == bad
    assert not (project / "CLAUDE.md").exists()


def test_permissions_of_the_wrong_shape_are_never_replaced(tmp_path: Path) -> None:
    """`permissions` not an object, or `deny` not a list: exit 2 saying so; the file's bytes unchanged."""
    project, ledger = _project(tmp_path)
    (project / ".claude").mkdir()
    for bad in (b'{"permissions": ["Bash"]}', b'{"permissions": {"deny": "Agent"}}'):
        (project / ".claude" / "settings.json").write_bytes(bad)
        result = handoff("claude", "init", str(ledger), "--project", str(project))
        assert result.returncode == 2 and "`permissions.deny` a list" in result.stderr, result.stderr
        assert "nothing was changed" in result.stderr
        assert (project / ".claude" / "settings.json").read_bytes() == bad
    assert not (project / "CLAUDE.md").exists()


def test_init_refuses_a_ledger_that_is_not_there(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    result = handoff("claude", "init", str(tmp_path / "nope.yaml"), "--project", str(project))
    assert result.returncode == 2 and "no such ledger file" in result.stderr
    assert not (project / ".claude").exists()


def test_hooks_call_this_python_when_handoff_is_run_as_a_module(tmp_path: Path) -> None:
    """Run as `python -m engine.cli.main`, the hooks call the same interpreter (never a `handoff` on PATH)."""
    project, ledger = _project(tmp_path)
    handoff("claude", "init", str(ledger), "--project", str(project))
    command = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert shlex.split(command)[:4] == [sys.executable, "-P", "-m", "engine.cli.main"]


def test_a_module_in_the_project_folder_never_stands_in_for_the_hook(tmp_path: Path) -> None:
    """Claude Code runs hooks in the project folder, which the agent writes. `python -m` puts the
    working folder first on sys.path: an `engine/` package the agent left there was imported as the
    hook and answered `{}` (no objection) to everything. The hooks run `python -P -m` (Python 3.11+:
    no unsafe path first), so the installed engine judges, and `handoff approve` stays for people."""
    project, ledger = _project(tmp_path)
    handoff("claude", "init", str(ledger), "--project", str(project))
    fake = project / "engine" / "cli"
    fake.mkdir(parents=True)
    for init in (project / "engine" / "__init__.py", fake / "__init__.py"):
        init.write_text("")
    (fake / "main.py").write_text("print('{}')\n")
    command = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(project),
            "tool_input": {"command": f"handoff approve {ledger.resolve()} web-01 --yes", "description": "x"}}
    answer = subprocess.run(shlex.split(command), input=json.dumps(call), cwd=project, capture_output=True,
                            text=True, timeout=60)
    assert answer.returncode == 0, answer.stderr
    decision = json.loads(answer.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and "is for people" in decision["permissionDecisionReason"]
