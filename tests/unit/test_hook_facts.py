"""The hook's facts (engine.hooks.facts): kept only from a validated read of the very bytes
the ledger holds, private to the user, never used for other bytes, never made from a
ledger that does not validate (the hook then fails closed), loaded without pydantic."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engine.hooks import facts
from engine.store.file import FileStore
from tests.conftest import ROOT, RUNBOOK_LEDGER

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code" / "PreToolUse.json"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


def pre_tool(ledger: Path, command: str = "grep -c lag /var/log/app.log") -> tuple[str, str]:
    data = json.loads(FIXTURE.read_text())
    data.update(session_id="facts-test", cwd=str(ledger.parent), tool_input={"command": command})
    out = subprocess.run([sys.executable, "-m", "engine.cli.main", "hook", "pre-tool-use", "--ledger", str(ledger)],
                         input=json.dumps(data), capture_output=True, text=True, timeout=60, cwd=str(ledger.parent),
                         env={**os.environ, "CLAUDE_CODE_SESSION_ID": "facts-test"})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    answer = json.loads(out.stdout).get("hookSpecificOutput") or {}
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", "")


def expected(path: Path) -> dict:
    return facts.of_ledger(FileStore(str(path)).read())


def test_a_hook_call_keeps_the_facts_of_what_it_validated(tmp_path, home):
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER.replace("handoff_note: first note", "agent: {unknown_commands: ask}\nhandoff_note: first note"))
    assert facts.load(str(path)) is None  # nothing known yet: the full read
    assert pre_tool(path)[0] == "ask"
    got = facts.load(str(path))
    assert got is not None and got.key == facts.read_key(str(path))[1]
    want = expected(path)
    assert got.states == want["states"] == {"db-1": "awaiting_approval", "db-2": "verified", "db-3": "failed",
                                            "db-4": "failed", "db-5": "queued"}
    assert [(s.name, list(s.run), s.from_, s.to, s.reversible) for s in got.steps()] == \
        [(s["name"], s["run"], s["from"], s["to"], s["reversible"]) for s in want["steps"]]
    assert got.unknown_commands == "ask" and got.paused is None and got.session == want["session"]
    where = facts.facts_path(os.path.realpath(path))
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o600 and not where.startswith(str(tmp_path / "fleet"))
    assert facts.stored_key(str(path)) == got.key


def test_other_bytes_never_get_the_old_facts(tmp_path, home):
    """A hand edit (db-5 done, paused): the facts of the old bytes are not used; the next
    hook call reads the ledger itself and keeps the new facts."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    pre_tool(path)
    path.write_text(RUNBOOK_LEDGER.replace("db-5: {state: queued}", "db-5: {state: done}")
                    + "paused: {by: ann, why: maintenance window}\n")
    assert facts.load(str(path)) is None
    pre_tool(path)
    got = facts.load(str(path))
    assert got.states["db-5"] == "done" and got.paused == {"by": "ann", "why": "maintenance window"}


def test_a_ledger_that_does_not_validate_gets_no_facts_and_the_hook_fails_closed(tmp_path, home):
    path = tmp_path / "fleet.yaml"
    bad = RUNBOOK_LEDGER.replace("handoff_note: first note", "agent: {unknown_commands: sometimes}\nhandoff_note: x")
    path.write_text(bad)
    kind, reason = pre_tool(path)
    assert kind == "deny" and "could not check this against the ledger" in reason and "unknown_commands" in reason
    assert facts.load(str(path)) is None and not os.path.exists(facts.facts_path(os.path.realpath(path)))
    assert path.read_text() == bad  # nothing written over it


def test_forged_or_foreign_facts_are_ignored(tmp_path, home):
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    pre_tool(path)
    where = facts.facts_path(os.path.realpath(path))
    head, states = Path(where).read_text().split("\n", 1)
    good = json.loads(head)
    assert json.loads(states) == expected(path)["states"]
    for forged, mode in ((dict(good, path="/elsewhere/ledger.yaml"), 0o600), (dict(good, key="0" * 32), 0o600),
                         (dict(good, v=99), 0o600), (good, 0o666), ("not json", 0o600)):
        Path(where).write_text(json.dumps(forged) + "\n" + states if not isinstance(forged, str) else forged)
        os.chmod(where, mode)
        assert facts.load(str(path)) is None, forged if isinstance(forged, str) else mode
    for cut in (states[:-1], states[:20], ""):  # states cut short (a foreign writer: ours are written whole)
        Path(where).write_text(head + "\n" + cut)
        assert facts.load(str(path)) is None, cut


def test_target_states_are_decoded_only_for_a_command_with_a_steps_words(tmp_path, home):
    """The states line is decoded only when a command has all of some step's words (then the
    target names say whether it is that step's command for a target); if it does not decode
    then, the facts are dropped and the ledger itself is read, which stores good ones."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    pre_tool(path)
    where = facts.facts_path(os.path.realpath(path))
    head, states = Path(where).read_text().split("\n", 1)
    assert pre_tool(path, "echo sync db-2")[0] == "deny"  # the step's command, outside `handoff run`
    Path(where).write_text(head + "\n" + "{" + "x" * len(states) + "}\n")  # braces kept, the rest garbled
    got = facts.load(str(path))
    assert got is not None
    assert pre_tool(path, "grep -c lag /var/log/app.log")[0] == "none"  # no step's words: the states are not read
    kind, reason = pre_tool(path, "echo sync db-2")
    assert kind == "deny" and f"handoff run {path} db-2 sync" in reason, reason
    assert facts.load(str(path)).states == expected(path)["states"]  # stored again, whole


def test_loading_facts_imports_no_pydantic(tmp_path, home):
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    pre_tool(path)
    code = (f"import sys, engine.hooks.facts as f; got = f.load({str(path)!r}); "
            "print(got is not None, 'pydantic' in sys.modules, 'yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["True", "False", "False"], out.stderr
