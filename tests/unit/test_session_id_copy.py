"""A copied session id is not a credential: a second, real process presenting the id of
the live session that holds the lease cannot renew it and become a second driver."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, handoff

SLEEP = "import time; time.sleep(30)"
MARK = "import sys; open(sys.argv[1], 'a').write('x')"


def _ledger(tmp_path: Path, runs: Path) -> Path:
    data = {"task": "copied-id", "targets": {"a": {}, "b": {}}, "runbook": {"steps": [
        {"name": "wait", "from": "queued", "to": "waited", "reversible": True, "run": [sys.executable, "-c", SLEEP]},
        {"name": "mark", "from": "waited", "to": "done", "reversible": True, "run": [sys.executable, "-c", MARK, str(runs)]}]},
        "budget": {"steps": 1}}
    path = tmp_path / "ops" / "ledger.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _session(ledger: Path) -> dict | None:
    return (yaml.safe_load(ledger.read_text()) or {}).get("session")


def test_a_built_in_sessions_id_presented_by_another_process_does_not_renew_its_lease(tmp_path):
    runs = tmp_path / "runs.txt"
    ledger = _ledger(tmp_path, runs)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    owner = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not ((s := _session(ledger)) and (yaml.safe_load(ledger.read_text())["targets"]["a"].get("in_flight")
                                                or yaml.safe_load(ledger.read_text())["targets"]["b"].get("in_flight"))):
            assert time.monotonic() < deadline and owner.poll() is None, "the session never started its step"
            time.sleep(0.05)
        held = _session(ledger)
        copy = handoff("run", ledger, "a", env={**env, "CLAUDE_CODE_SESSION_ID": held["id"]})
        said = copy.stdout + copy.stderr
        assert copy.returncode == 5, said
        assert "is not a credential" in said and f"pid {held['pid']}" in said, said
        assert _session(ledger) == held  # the live session's lease, untouched
        assert not runs.exists()
    finally:
        owner.kill()
        owner.wait()


def test_a_claude_code_sessions_id_presented_without_its_secret_does_not_renew_its_lease(tmp_path):
    """Session X takes the lease through `handoff run` (state folder A); the same id from another user's
    state folder B is refused (exit 5); X itself, with its secret, renews it."""
    runs = tmp_path / "runs.txt"
    ledger = _ledger(tmp_path, runs)
    data = yaml.safe_load(ledger.read_text())
    data["targets"] = {"a": {"state": "waited"}, "b": {"state": "waited"}}
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    mine = cli_env(XDG_STATE_HOME=str(tmp_path / "state-a"), CLAUDE_CODE_SESSION_ID="cc-session-1")
    first = handoff("run", ledger, "a", env=mine)
    assert first.returncode == 0, first.stdout + first.stderr
    held = _session(ledger)
    assert held["id"] == "cc-session-1" and held["bind"]
    nonce = next((tmp_path / "state-a" / "handoff" / "sessions").iterdir())
    assert oct(os.stat(nonce).st_mode & 0o777) == "0o600" and held["bind"] not in nonce.read_text()
    theirs = {**mine, "XDG_STATE_HOME": str(tmp_path / "state-b")}
    copy = handoff("run", ledger, "b", env=theirs)
    said = copy.stdout + copy.stderr
    assert copy.returncode == 5 and "is not a credential" in said and "secret" in said, said
    assert runs.read_text() == "x" and _session(ledger)["bind"] == held["bind"]
    again = handoff("run", ledger, "b", env=mine)
    assert again.returncode == 0, again.stdout + again.stderr
    assert runs.read_text() == "xx"


def _hook(event: str, fixture: str, ledger: Path, state: Path, **changes) -> dict:
    import json

    data = json.loads((ROOT / "tests" / "fixtures" / "claude_code" / f"{fixture}.json").read_text())
    data.update(session_id="cc-hooked", cwd=str(ledger.parent), **changes)
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "hook", event, "--ledger", str(ledger)],
                            input=json.dumps(data), capture_output=True, text=True, timeout=60, cwd=str(ledger.parent),
                            env=cli_env(XDG_STATE_HOME=str(state), CLAUDE_CODE_SESSION_ID="cc-hooked"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def test_a_hook_presenting_a_claude_code_sessions_id_without_its_secret_is_denied(tmp_path):
    """The hooks' own renewal (a heartbeat on every tool call) needs the secret too."""
    ledger = _ledger(tmp_path, tmp_path / "runs.txt")
    _hook("session-start", "SessionStart-startup", ledger, tmp_path / "state-a")
    held = _session(ledger)
    assert held["id"] == "cc-hooked" and held["bind"]
    command = {"command": f"handoff run {ledger} a", "description": "x"}
    theirs = _hook("pre-tool-use", "PreToolUse", ledger, tmp_path / "state-b", tool_input=command)
    out = theirs.get("hookSpecificOutput") or {}
    assert out.get("permissionDecision") == "deny", theirs
    mine = _hook("pre-tool-use", "PreToolUse", ledger, tmp_path / "state-a", tool_input=command)
    assert (mine.get("hookSpecificOutput") or {}).get("permissionDecision") != "deny", mine
    assert _session(ledger) == held
