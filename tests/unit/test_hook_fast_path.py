"""`handoff hook pre-tool-use` with the facts of the ledger's current bytes cached
(engine.hooks.context): it judges policy, pause, raw steps and ledger writes from the
facts, refreshes the lease's heartbeat, and never loads pydantic, the model or the
guard; only a line with a `handoff run` of this ledger loads the guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.hooks import facts
from tests.conftest import ROOT, RUNBOOK_LEDGER

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code" / "PreToolUse.json"
WATCHED = ("pydantic", "yaml", "engine.ledger.model", "engine.ledger.guard", "engine.ledger.invariants", "engine.store.file", "engine.ledger.ops")


def runner(watched: tuple[str, ...]) -> str:
    """One hook process, as Claude Code starts it, that says on its last stderr line which of `watched` it loaded."""
    return ("import json, runpy, sys\n"
            "try:\n    runpy.run_module('engine.cli.main', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            f"print(json.dumps([m for m in {watched!r} if m in sys.modules]), file=sys.stderr)\n")


@pytest.fixture
def ledger(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER.replace("handoff_note: first note",
                                           "agent: {unknown_commands: deny}\nhandoff_note: first note"))
    return path


def hook(ledger: Path, command: str, watched: tuple[str, ...] = WATCHED,
         event: str = "pre-tool-use") -> tuple[str, str, list[str]]:
    """(decision, reason, `watched` modules loaded) of one `event` call on a Bash `command`."""
    data = json.loads(FIXTURE.read_text())
    data.update(session_id="fast-test", cwd=str(ledger.parent), tool_input={"command": command})
    if event == "post-tool-use":
        data.update(hook_event_name="PostToolUse", tool_response={"stdout": "", "stderr": "", "interrupted": False})
    out = subprocess.run([sys.executable, "-c", runner(watched), "hook", event, "--ledger", str(ledger)],
                         input=json.dumps(data), capture_output=True, text=True, timeout=60, cwd=str(ledger.parent),
                         env={**os.environ, "CLAUDE_CODE_SESSION_ID": "fast-test", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    answer = json.loads(out.stdout).get("hookSpecificOutput") or {}
    loaded = json.loads(out.stderr.strip().splitlines()[-1])
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", ""), loaded


def test_with_facts_a_call_judges_and_beats_without_the_model(ledger):
    first = hook(ledger, "grep -c lag /var/log/app.log")
    assert first[0] == "deny" and "engine.ledger.model" in first[2]  # no facts yet: the full read, which keeps them
    assert facts.load(str(ledger)).session["id"] == "fast-test"  # the first call took the lease
    beat = Path(str(ledger) + ".heartbeat")
    beat.unlink()
    before = ledger.read_bytes()
    decision, reason, loaded = hook(ledger, "grep -c lag /var/log/app.log")
    assert (decision, loaded) == ("deny", [])
    assert "agent.unknown_commands: deny" in reason and "`grep`" in reason
    assert json.loads(beat.read_text())["session"] == "fast-test"  # the lease's heartbeat, refreshed on this call
    assert ledger.read_bytes() == before


def test_raw_steps_and_ledger_writes_are_judged_from_the_facts(ledger):
    hook(ledger, "true")
    decision, reason, loaded = hook(ledger, "echo sync db-2")
    assert (decision, loaded) == ("deny", [])
    assert f"handoff run {ledger} db-2 sync" in reason
    decision, reason, loaded = hook(ledger, f"sed -i s/queued/done/ {ledger}")
    assert (decision, loaded) == ("deny", []) and "written only by the engine" in reason
    decision, _, loaded = hook(ledger, f"handoff status {ledger}")
    assert (decision, loaded) == ("allow", [])


def test_an_allowed_call_loads_no_journal(ledger):
    """A call the hook allows writes no journal record, so it does not load the journal
    (engine.ledger.access takes the journal's file name from engine.audit.journal_io)."""
    hook(ledger, "true")  # the first call: the lease taken and journaled, the facts kept
    decision, _, loaded = hook(ledger, f"handoff status {ledger}", watched=("engine.audit.journal",))
    assert (decision, loaded) == ("allow", [])


# What an allowed call skipped when the hook met its goal (bench/goals.py: at most 5x `python -c
# pass`): each cost it 1-6 ms, and together with building the dataclasses, 26 ms of 67.
HEAVY = ("dataclasses", "inspect", "hashlib", "ctypes", "socket", "pathlib", "threading", "secrets", "traceback",
         "engine.audit.redact", "engine.lease.rules", "engine.store.base", "engine.settings")


def test_an_allowed_call_loads_none_of_the_heavy_modules(ledger):
    hook(ledger, "true")  # the first call: the lease taken and journaled, the facts kept
    decision, _, loaded = hook(ledger, f"handoff status {ledger}", watched=HEAVY)
    assert (decision, loaded) == ("allow", [])
    assert json.loads(Path(str(ledger) + ".heartbeat").read_text())["host"] == os.uname().nodename


def test_post_tool_use_journals_with_the_ledgers_own_patterns_from_the_facts(ledger):
    """post-tool-use, after every tool call, writes its journal record from the facts: the
    heartbeat, the record, masked by the ledger's own `redact:` pattern, and no model."""
    ledger.write_text(ledger.read_text().replace("handoff_note: first note", "redact: ['tok-[0-9]{6}']\nhandoff_note: first note"))
    hook(ledger, "true")  # the first call: the lease taken, the facts kept
    Path(str(ledger) + ".heartbeat").unlink()
    before = ledger.read_bytes()
    _, _, loaded = hook(ledger, "curl -H 'X-Key: tok-123456' https://status", event="post-tool-use")
    assert loaded == []
    journal = [json.loads(line) for line in Path(str(ledger) + ".journal.jsonl").read_text().splitlines()]
    (record,) = [r for r in journal if r["kind"] == "tool_use"]
    assert record["msg"].startswith("claude code: Bash curl") and "tok-123456" not in json.dumps(record)
    assert json.loads(Path(str(ledger) + ".heartbeat").read_text())["session"] == "fast-test"
    assert ledger.read_bytes() == before
    _, _, heavy = hook(ledger, "ls", watched=HEAVY, event="post-tool-use")
    assert heavy == ["engine.audit.redact", "engine.settings"]  # the journal's own, and none of the others


def test_a_pause_denies_handoff_run_before_the_guard_loads(ledger):
    text = ledger.read_text().replace("handoff_note: first note", "paused: {by: alice, why: disk full}\nhandoff_note: first note")
    ledger.write_text(text)
    hook(ledger, "true")
    decision, reason, loaded = hook(ledger, f"handoff run {ledger} db-5 check")
    assert decision == "deny" and "paused by alice: disk full" in reason
    assert loaded == []


def test_only_a_handoff_run_loads_the_guard(ledger):
    hook(ledger, "true")
    decision, reason, loaded = hook(ledger, f"handoff run {ledger} db-5 check")
    assert decision == "deny" and "never touch more than 2 dbs concurrently" in reason
    assert "engine.ledger.guard" in loaded and "engine.ledger.model" in loaded
    ledger.write_text(ledger.read_text().replace("- never touch more than 2 dbs concurrently\n", ""))
    decision, reason, loaded = hook(ledger, f"handoff run {ledger} db-5 check")
    assert decision == "allow" and "the guard allows it" in reason, reason
    assert "engine.ledger.guard" in loaded and "engine.ledger.model" in loaded
    decision, reason, _ = hook(ledger, f"handoff run {ledger} db-3 cutover")
    assert decision == "deny" and "cutover" in reason
