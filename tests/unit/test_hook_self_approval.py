"""An agent in Claude Code tries to approve its own irreversible step through Bash: each tool
call goes as Claude Code sends it (the real `handoff hook pre-tool-use` process reads its
JSON; a `deny` stops the call), and what is let through runs in a real `bash -c` with Claude
Code's variables set. A marker file beside the ledger proves a spawn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"
BLANK = " ".join(f"{name}=" for name in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID",
                                          "CLAUDE_CODE_SSE_PORT", "HANDOFF_AGENT"))


def _tool_call(ledger: Path, command: str, env: dict[str, str]) -> str:
    """The hook's answer to one Bash call; the call runs unless it is `deny`."""
    data = {"session_id": "", "hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(ledger.parent),
            "tool_input": {"command": command, "description": "x"}}
    out = subprocess.run([sys.executable, "-m", "engine.cli.main", "hook", "pre-tool-use", "--ledger", str(ledger)],
                         input=json.dumps(data), capture_output=True, text=True, env=env, cwd=ledger.parent, timeout=60)
    kind = (json.loads(out.stdout).get("hookSpecificOutput") or {}).get("permissionDecision", "none")
    if kind != "deny":
        subprocess.run(["bash", "-c", command], env=env, cwd=ledger.parent, capture_output=True, timeout=60)
    return kind


def test_blanked_variables_and_ansi_c_quoting_do_not_let_the_agent_approve_its_own_step(tmp_path) -> None:
    """`CLAUDECODE= ... handoff $'approve' L db-18 --yes --as alice`, then `handoff run L db-18 link`, under the
    strictest policy: the hook denies the approve (bash's `$'approve'` is `approve`), the engine would refuse it
    too (a Claude Code variable set empty is still set), no approval is written and the step never runs."""
    (tmp_path / "mark.py").write_text(MARK)
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump({
        "task": "self-approval", "owner_shift": "test-oncall", "agent": {"unknown_commands": "deny"},
        "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done", "reversible": False,
                               "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
        "targets": {"db-18": {"state": "checked", "checkpoint": "0/18"}}}, sort_keys=False))
    env = cli_env(CLAUDECODE="1", CLAUDE_CODE_ENTRYPOINT="cli", PYTHONPATH=str(ROOT),
                  PATH=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin")
    approve = f"{BLANK} handoff $'approve' {ledger} db-18 --yes --as alice --comment 'lag 1.4s, go'"
    assert _tool_call(ledger, approve, env) == "deny"
    # Had the hook let it through, the engine refuses it on its own: the variables are set, if empty.
    ran = subprocess.run(["bash", "-c", approve], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and "approving is for people" in ran.stderr, ran.stdout + ran.stderr
    _tool_call(ledger, f"handoff run {ledger} db-18 link", env)
    assert not (yaml.safe_load(ledger.read_text())["targets"]["db-18"].get("approvals"))
    assert not (tmp_path / "spawned-db-18").exists()
