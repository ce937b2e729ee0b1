"""A step's pid goes into its intent only once the step has run long enough to be looked
for (engine.session.runner.RUNNING_AFTER): a quick step costs the ledger two writes (its
intent, its result), a long one a third, with the pid of the step's own process."""

from __future__ import annotations

import json
from pathlib import Path

from session_kit import journal, load, resume, start, tool, tool_ledger, wait_for


def _history(ledger: Path) -> dict[int, dict]:
    """The history journal's `ledger_write` records, by revision."""
    path = Path(str(ledger) + ".history.jsonl")
    return {r["rev"]: r for r in map(json.loads, path.read_text().splitlines()) if r.get("kind") == "ledger_write"}


def _revisions(ledger: Path, kind: str) -> dict[str, int]:
    return {r["step"]: r["rev"] for r in journal(ledger) if r["kind"] == kind}


def test_a_quick_step_writes_its_intent_and_its_result_and_nothing_between(tmp_path: Path) -> None:
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "one")},
             {"name": "sync", "from": "checked", "to": "done", "reversible": True, "run": tool("say", "two")}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    starts, results = _revisions(ledger, "step_start"), _revisions(ledger, "transition")
    assert set(starts) == set(results) == {"check", "sync"}
    for step in starts:
        assert results[step] == starts[step] + 1, (step, starts, results)
    history = _history(ledger)
    assert not any("pid" in (r.get("targets") or {}).get("a", {}).get("in_flight", {}) for r in history.values())


def test_a_long_step_has_its_own_pid_noted_while_it_runs(tmp_path: Path) -> None:
    """The pid appears in the intent while the step runs, is that step's process (its
    command, and the intent's token in its environment), and is a write of its own
    between the intent and the result."""
    steps = [{"name": "slow", "from": "queued", "to": "done", "reversible": True,
              "run": ["{python}", "-c", "import time; time.sleep(2.5)", "{target}"]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}})
    session = start("resume", "--ledger", str(ledger), world=tmp_path)
    try:
        flight = wait_for(lambda: (load(ledger)["targets"]["a"].get("in_flight") or {}).get("pid") and
                          load(ledger)["targets"]["a"]["in_flight"], timeout=20, what="the step's pid in its intent")
        pid = flight["pid"]
        assert flight["pgid"] == pid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:4] == [b"-c", b"import time; time.sleep(2.5)", b"a"], cmdline
        assert flight["token"].encode() in Path(f"/proc/{pid}/environ").read_bytes()
        out, err = session.communicate(timeout=60)
    finally:
        if session.poll() is None:
            session.kill()
            session.communicate()
    assert session.returncode == 0, out + err
    start_rev, result_rev = _revisions(ledger, "step_start")["slow"], _revisions(ledger, "transition")["slow"]
    assert result_rev == start_rev + 2
    noted = _history(ledger)[start_rev + 1]["targets"]["a"]["in_flight"]
    assert noted["pid"] == noted["pgid"] == pid and noted["token"] == flight["token"]
    assert load(ledger)["targets"]["a"]["state"] == "done" and "in_flight" not in load(ledger)["targets"]["a"]
