"""The pre-tool-use hook against routes to the ledger that no plain path names: per-process
links (/dev/fd/N, /dev/stdin, /proc/self/cwd, /proc/$$/cwd), hard links, file tools of other
names (an MCP server's write_file), the hooks' own settings, and a line slow to judge. Each is
denied; where a test lets bash run what the hook allowed, it shows the ledger changed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from session_kit import demo_copy
from test_hook_writers_spelled import _snap

from engine.hooks import TIMEOUTS

BIN = Path(sys.executable).parent


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "HANDOFF_AGENT"))}
    env.update(CLAUDECODE="1", CLAUDE_CODE_ENTRYPOINT="cli", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               XDG_CACHE_HOME=str(tmp / "xdg-cache"), XDG_STATE_HOME=str(tmp / "xdg-state"),
               CLAUDE_PROJECT_DIR=str(tmp))  # Claude Code sets it for every hook
    return env


def hook(env: dict[str, str], ledger: Path, tool: str, given: dict, cwd: Path, hook_cwd: Path | None = None,
         timeout: float = 60) -> tuple[str, str]:
    """The real hook process; `hook_cwd` is where Claude Code starts it (the project), `cwd` the tool's folder."""
    data = {"hook_event_name": "PreToolUse", "tool_name": tool, "cwd": str(cwd), "tool_input": given}
    p = subprocess.run([str(BIN / "handoff"), "hook", "pre-tool-use", str(ledger)], input=json.dumps(data),
                       capture_output=True, text=True, env=env, timeout=timeout, cwd=str(hook_cwd or cwd))
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout or "{}").get("hookSpecificOutput") or {}
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", "")


def _bash(env: dict[str, str], line: str, cwd: Path) -> None:
    subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, env=env, timeout=30)


def _changed(env: dict[str, str], line: str, folder: Path) -> list[str]:
    """What running `line` with bash in `folder` changes there (what Claude Code does with an allowed line)."""
    before = _snap(folder)
    _bash(env, line, folder)
    return sorted(k for k, v in _snap(folder).items() if before.get(k) != v)


@pytest.fixture
def world(tmp_path: Path):
    env = _env(tmp_path)
    ledger = demo_copy(tmp_path)
    subprocess.run([str(BIN / "handoff"), "note", str(ledger), "--set", "-"], input=b"note", capture_output=True,
                   env={k: v for k, v in env.items() if not k.startswith("CLAUDE")}, check=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "forged.yaml").write_text(ledger.read_text().replace("state: blocked", "state: queued"))
    return {"ledger": ledger, "env": env, "proj": tmp_path, "scratch": scratch}


PER_PROCESS = [
    "cp ../scratch/forged.yaml /dev/stdin < ledger.yaml",
    "cp ../scratch/forged.yaml /proc/self/fd/0 < ledger.yaml",
    "cp ../scratch/forged.yaml /dev/fd/5 5<ledger.yaml",
    "dd if=../scratch/forged.yaml of=/dev/fd/3 3<ledger.yaml",
    "exec 3<ledger.yaml; cp ../scratch/forged.yaml /dev/fd/3",
    "sed -i 's/state: blocked/state: queued/' /proc/$$/cwd/ledger.yaml",
    # The Bash tool has `cd fleet`; Claude Code starts the hook in the project folder.
    "sed -i 's/state: blocked/state: queued/' /proc/self/cwd/ledger.yaml",
    "ln -s /proc/self/cwd ../scratch/here; sed -i 's/state: blocked/state: queued/' ../scratch/here/ledger.yaml",
]


@pytest.mark.parametrize("line", PER_PROCESS)
def test_a_per_process_path_to_the_ledger_is_denied(world, line: str) -> None:
    """/dev/fd/N, /dev/stdin and /proc/PID/{fd,cwd} name the shell's files, not the hook's: judged as the shell's."""
    fleet = world["ledger"].parent
    decision, reason = hook(world["env"], world["ledger"], "Bash", {"command": line}, fleet, hook_cwd=world["proj"])
    if decision != "deny":
        pytest.fail(f"{line!r}: the hook answered {decision!r}; run by bash it changed {_changed(world['env'], line, fleet)}")
    assert "written only by the engine" in reason, reason


def test_reading_through_a_descriptor_still_passes(world) -> None:
    """`cat /dev/stdin < L` and `diff <(...) /dev/fd/3 3<L` only read: a reader naming /dev/fd is not a write."""
    fleet = world["ledger"].parent
    for line in ("cat /dev/stdin < ledger.yaml", "grep -c state /dev/fd/3 3<ledger.yaml", "cat /proc/self/cwd/ledger.yaml"):
        decision, reason = hook(world["env"], world["ledger"], "Bash", {"command": line}, fleet)
        assert decision != "deny", (line, reason)


LINK_MAKERS = [
    ("cp --li ledger.yaml ../scratch/h.yaml", "../scratch/h.yaml"),
    ("cp -r --lin . ../scratch/copy", "../scratch/copy/ledger.yaml"),
    ("cp --sy $PWD/ledger.yaml ../scratch/s.yaml", "../scratch/s.yaml"),
    ("rsync -a --link-dest=$PWD/ ./ ../scratch/copy/", "../scratch/copy/ledger.yaml"),
    ("rsync -a --link-dest ../fleet ./ ../scratch/copy/", "../scratch/copy/ledger.yaml"),
]


@pytest.mark.parametrize("maker, link", LINK_MAKERS)
def test_a_link_to_the_ledger_is_denied(world, maker: str, link: str) -> None:
    """Making the link is the step the hook can see by name (GNU's option prefixes included)."""
    fleet = world["ledger"].parent
    decision, reason = hook(world["env"], world["ledger"], "Bash", {"command": maker}, fleet)
    if decision != "deny":
        _bash(world["env"], maker, fleet)
        same = os.path.samefile(fleet / link, world["ledger"])
        pytest.fail(f"{maker!r}: the hook answered {decision!r}; run by bash, {link} is "
                    f"{'the ledger itself (same inode)' if same else 'a copy'}")


@pytest.mark.parametrize("how", ["redirect", "Write"])
def test_writing_through_a_hard_link_to_the_ledger_is_denied(world, how: str) -> None:
    """Whatever made it (a person's backup habit, a route above), a hard link is the ledger: a write there writes it."""
    fleet, scratch = world["ledger"].parent, world["scratch"]
    os.link(world["ledger"], scratch / "h.yaml")
    before = _snap(fleet)
    if how == "redirect":
        line = "cat forged.yaml > h.yaml"
        decision, reason = hook(world["env"], world["ledger"], "Bash", {"command": line}, scratch)
        if decision != "deny":
            _bash(world["env"], line, scratch)
    else:
        text = (scratch / "forged.yaml").read_text()
        decision, reason = hook(world["env"], world["ledger"], "Write", {"file_path": str(scratch / "h.yaml"),
                                                                         "content": text}, scratch)
        if decision != "deny":
            (scratch / "h.yaml").write_text(text)  # what the Write tool does, in place
    changed = sorted(k for k, v in _snap(fleet).items() if before.get(k) != v)
    assert decision == "deny", f"{how}: the hook answered {decision!r}; the write changed {changed or 'nothing'}"


@pytest.mark.parametrize("tool, key", [("mcp__filesystem__write_file", "path"), ("mcp__filesystem__edit_file", "path"),
                                       ("mcp__filesystem__move_file", "destination")])
def test_a_tool_of_another_name_writing_the_ledger_is_denied(tmp_path: Path, tool: str, key: str) -> None:
    """Any tool given the ledger's path is judged as a write unless its name says it only looks."""
    ledger = demo_copy(tmp_path)
    given = {key: str(ledger), "content": "targets: {}\n", "source": str(tmp_path / "x.yaml")}
    decision, reason = hook(_env(tmp_path), ledger, tool, given, tmp_path)
    assert decision == "deny", f"{tool} {given[key]}: the hook answered {decision!r}"
    assert "never change it directly" in reason, reason
    decision, _ = hook(_env(tmp_path), ledger, "mcp__filesystem__read_text_file", {"path": str(ledger)}, tmp_path)
    assert decision != "deny"  # reading it is the agent's job


def test_the_hooks_own_settings_are_not_the_agents_to_write(tmp_path: Path) -> None:
    """The settings that wire the hooks (or could switch them off: `disableAllHooks`) are a person's to edit."""
    ledger = demo_copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "HANDOFF_AGENT"))}
    subprocess.run([str(BIN / "handoff"), "claude", "init", str(ledger), "--project", str(tmp_path)], check=True,
                   capture_output=True, env=env)
    settings = tmp_path / ".claude" / "settings.json"
    assert "pre-tool-use" in settings.read_text()
    for path in (settings, tmp_path / ".claude" / "settings.local.json"):
        decision, reason = hook(_env(tmp_path), ledger, "Write", {"file_path": str(path), "content": "{}\n"}, tmp_path)
        assert decision == "deny", f"Write {path} (removing the hooks): the hook answered {decision!r}"
        assert "wires the hooks" in reason, reason
    line = "echo '{\"disableAllHooks\": true}' > .claude/settings.local.json"
    decision, _ = hook(_env(tmp_path), ledger, "Bash", {"command": line}, tmp_path)
    assert decision == "deny", f"{line}: the hook answered {decision!r}"


def test_a_line_slow_to_judge_is_answered_within_the_timeout(world) -> None:
    """A quoted glob over a symlink loop (millions of paths) is not walked whole: the hook answers in time, and
    the `sed -i` after it is denied (at Claude Code's timeout the line would run unjudged)."""
    fleet = world["ledger"].parent
    setup = "mkdir -p ../t && for i in 0 1 2 3 4 5 6 7; do ln -s . ../t/$i; done"
    decision, _ = hook(world["env"], world["ledger"], "Bash", {"command": setup}, fleet)
    assert decision != "deny"
    _bash(world["env"], setup, fleet)
    line = "echo '../t/*/*/*/*/*/*/*'; sed -i 's/state: blocked/state: queued/' ledger.yaml"
    limit = TIMEOUTS["pre-tool-use"]
    try:
        decision, _ = hook(world["env"], world["ledger"], "Bash", {"command": line}, fleet, timeout=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the hook had not answered after its {limit} s timeout, so Claude Code runs the line unjudged; "
                    f"run by bash it changed {_changed(world['env'], line, fleet)}")
    assert decision == "deny"


def test_a_judge_slower_than_the_timeout_is_answered_by_a_denial_in_time(tmp_path: Path, monkeypatch) -> None:
    """Whatever makes judging slow (a glob, a git that hangs, a busy disk), the hook answers before Claude
    Code's timeout, and the answer is a denial: at the timeout Claude Code would run the line unjudged."""
    from engine.hooks import judge, protocol

    ledger = demo_copy(tmp_path)
    monkeypatch.setitem(TIMEOUTS, "pre-tool-use", 1.5)  # Claude Code's timeout, shortened for the test
    monkeypatch.setattr(judge, "judge_line", lambda *a, **k: time.sleep(30))  # answered before this ends, or not at all
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    data = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(ledger.parent),
            "tool_input": {"command": "sed -i s/a/b/ notes.txt"}}
    protocol.run("pre-tool-use", str(ledger), io.StringIO(json.dumps(data)), out)
    answer = json.loads(out.getvalue())["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", answer
    assert "could not decide within 1 s" in answer["permissionDecisionReason"], answer
    assert "run it in smaller parts" in answer["permissionDecisionReason"], answer  # what to do
    assert "could not decide within" in (ledger.parent / "ledger.yaml.journal.jsonl").read_text()
