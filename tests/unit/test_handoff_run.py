"""`handoff run LEDGER TARGET [STEP]`: one step through the session's decision core, with its
own exit codes, under the ledger's lease (a Claude Code session's when it runs inside one)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from session_kit import counts, demo_copy, env, handoff, journal, load, resume, tool, tool_ledger

STEPS = [
    {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "checked", "{target}")},
    {"name": "link", "from": "checked", "to": "done", "reversible": False, "run": tool("say", "link", "{target}")},
]
# Two ways out of `broken`: `handoff run` must be told which.
FORKED = {"steps": STEPS + [
    {"name": "fix", "from": "broken", "to": "checked", "reversible": True, "run": tool("fail", "{target}")},
    {"name": "skip", "from": "broken", "to": "checked", "reversible": True, "run": tool("say", "skip")},
], "states": ["broken"]}


def _run(*args: str, world: Path, **extra: str):
    import subprocess
    import sys

    from session_kit import ROOT

    return subprocess.run([sys.executable, "-m", "engine.cli.main", "run", *args], env={**env(world), **extra},
                          capture_output=True, text=True, timeout=90, cwd=str(ROOT))


def test_a_reversible_step_runs_and_is_recorded(tmp_path: Path) -> None:
    """Exit 0: the one step the runbook allows ran; the ledger and the journal say so, as a session's would."""
    ledger = tool_ledger(tmp_path, STEPS, {"a": {}})
    result = _run(str(ledger), "a", world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a: starting check" in result.stdout and "a: check passed. ledger updated: a.state = checked" in result.stdout
    assert load(ledger)["targets"]["a"]["state"] == "checked"
    assert load(ledger).get("session") is None  # its own short lease is given back
    kinds = [r["kind"] for r in journal(ledger)]
    assert "step_start" in kinds and "transition" in kinds


def test_an_irreversible_step_without_approval_pages_and_exits_1(tmp_path: Path) -> None:
    """Exit 1: nothing ran; the target awaits approval; the output names who was paged and the approve command."""
    pager = [{"run": ["{python}", "{ledger_dir}/tool.py", "say"]}]
    ledger = tool_ledger(tmp_path, STEPS, {"a": {"state": "checked"}}, notify=pager)
    result = _run(str(ledger), "a", "--as", "alice", world=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "link requires approval (irreversible). Paging test-oncall." in result.stdout
    assert f"handoff approve {ledger} a" in result.stdout
    target = load(ledger)["targets"]["a"]
    assert target["state"] == "awaiting_approval" and target["awaiting_by"] == "alice"
    assert not any(json.loads(line)[0] == "link" for line in (ledger.parent / "argv.log").read_text().splitlines())
    # alice asked for it: she cannot approve it; bob can, and then it runs.
    assert handoff("approve", str(ledger), "a", "--as", "alice", world=tmp_path).returncode == 1
    assert handoff("approve", str(ledger), "a", "--as", "bob", world=tmp_path).returncode == 0
    ran = _run(str(ledger), "a", world=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert load(ledger)["targets"]["a"]["state"] == "done"


def test_the_guard_refusing_is_exit_1_with_its_reason(tmp_path: Path) -> None:
    """A step named from the wrong state: nothing runs, exit 1, the guard's reason said."""
    ledger = tool_ledger(tmp_path, STEPS, {"a": {}})
    result = _run(str(ledger), "a", "link", world=tmp_path)
    assert result.returncode == 1
    assert "link did not run: a is queued; link runs only from checked" in result.stdout


def test_no_single_step_is_exit_2_listing_the_candidates(tmp_path: Path) -> None:
    """Two steps start from `broken`: exit 2 naming both; an unknown target or step is exit 2 too."""
    ledger = tool_ledger(tmp_path, STEPS, {"a": {"state": "broken"}}, runbook=FORKED)
    before = ledger.read_bytes()
    result = _run(str(ledger), "a", world=tmp_path)
    assert result.returncode == 2 and "fix (broken -> checked), skip (broken -> checked)" in result.stdout + result.stderr
    assert _run(str(ledger), "nope", world=tmp_path).returncode == 2
    assert _run(str(ledger), "a", "nostep", world=tmp_path).returncode == 2
    assert ledger.read_bytes() == before  # a usage error changes nothing


def test_a_failing_step_is_exit_7(tmp_path: Path) -> None:
    """It ran and failed: exit 7; the target is failed with the step's last output line as its reason."""
    ledger = tool_ledger(tmp_path, STEPS, {"a": {"state": "broken"}}, runbook=FORKED)
    result = _run(str(ledger), "a", "fix", world=tmp_path)
    assert result.returncode == 7, result.stdout + result.stderr
    assert load(ledger)["targets"]["a"]["state"] == "failed"


def test_paused_is_exit_4_and_drift_is_exit_3(tmp_path: Path) -> None:
    """A paused ledger runs nothing (4); a checkpoint reality contradicts stops before acting (3),
    paused or not: drift waits on a person's reconcile, and outranks a pause as in `handoff resume`."""
    ledger = demo_copy(tmp_path, {"db-50": {"state": "replicating", "checkpoint": "0/BAD"}, "db-19": {"state": "queued"}})
    world = tmp_path / "world"
    assert handoff("pause", str(ledger), "--reason", "freeze", world=world).returncode == 0
    paused = _run(str(ledger), "db-19", world=world)
    assert paused.returncode == 4 and "paused" in paused.stdout, paused.stdout + paused.stderr
    assert counts(world).get("db-19", {}).get("check_runs", 0) == 0
    drift = _run(str(ledger), "db-50", world=world)
    assert drift.returncode == 3, drift.stdout + drift.stderr
    assert "MISMATCH" in drift.stdout and "checkpoint drift" in load(ledger)["targets"]["db-50"]["reason"]
    assert load(ledger)["paused"]  # said, not lifted
    assert handoff("unpause", str(ledger), world=world).returncode == 0
    again = _run(str(ledger), "db-50", world=world)
    assert again.returncode == 3, again.stdout + again.stderr
    assert counts(world).get("db-50", {}).get("link_runs", 0) == 0


def test_inside_claude_code_it_acts_under_the_sessions_lease(tmp_path: Path) -> None:
    """With CLAUDE_CODE_SESSION_ID the lease is the Claude Code session's (no pid) and stays; another
    Claude Code session, or `handoff resume`, is refused with exit 5 naming it."""
    ledger = tool_ledger(tmp_path, STEPS, {"a": {}, "b": {}})
    first = _run(str(ledger), "a", world=tmp_path, CLAUDE_CODE_SESSION_ID="cc-one")
    assert first.returncode == 0, first.stdout + first.stderr
    lease = load(ledger)["session"]
    assert lease["id"] == "cc-one" and lease["runtime"] == "claude-code" and "pid" not in lease
    other = _run(str(ledger), "b", world=tmp_path, CLAUDE_CODE_SESSION_ID="cc-two")
    assert other.returncode == 5 and "Claude Code session cc-one" in other.stderr
    session = resume(ledger, world=tmp_path)
    assert session.returncode == 5 and "Claude Code session cc-one" in session.stderr
    again = _run(str(ledger), "b", world=tmp_path, CLAUDE_CODE_SESSION_ID="cc-one")
    assert again.returncode == 0 and load(ledger)["targets"]["b"]["state"] == "checked"


def test_an_idle_claude_code_lease_goes_stale_and_is_taken_over(tmp_path: Path) -> None:
    """A Claude Code session that stopped beating is stale after the limit; another one takes the lease."""
    ledger = tool_ledger(tmp_path, STEPS, {"a": {}, "b": {}})
    assert _run(str(ledger), "a", world=tmp_path, CLAUDE_CODE_SESSION_ID="cc-idle").returncode == 0
    beat = Path(os.path.realpath(ledger) + ".heartbeat")
    os.utime(beat, (time.time() - 30, time.time() - 30))
    taken = _run(str(ledger), "b", world=tmp_path, CLAUDE_CODE_SESSION_ID="cc-new", HANDOFF_LEASE_STALE_AFTER="10")
    assert taken.returncode == 0, taken.stdout + taken.stderr
    assert load(ledger)["session"]["id"] == "cc-new"
