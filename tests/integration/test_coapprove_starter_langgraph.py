"""Under `approvals: {count: 2}` whoever started the run that asked is never one of the two
people (docs/ledger.md, Approval policies: "none of them the requester (the session that
asked, and whoever started it)"). The built-in session journals its starter (`session_start`
`by`) and `handoff approve --as <starter>` is refused; a LangGraph run started with
`handoff resume --runtime langgraph --as alice` journals no starter, so alice counts as one of
the two and, with one other person, the irreversible step runs. A real run, the real
PostgreSQL checkpointer."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import handoff, journal, load, start, tool, tool_ledger, wait_for  # noqa: E402

CUT = [{"name": "cut", "from": "queued", "to": "done", "reversible": False, "timeout": 20, "approvals": {"count": 2},
        "run": tool("say", "cut")}]


def test_the_starter_of_a_langgraph_run_is_not_one_of_two_approvers(tmp_path: Path, checkpointer) -> None:  # noqa: F811
    url, _schema = checkpointer
    ledger = tool_ledger(tmp_path, CUT, {"t1": {"state": "queued"}})
    proc = start("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer", url, "--as", "alice",
                 world=tmp_path)
    try:
        wait_for(lambda: load(ledger)["targets"]["t1"].get("state") == "awaiting_approval"
                 and any(r["kind"] == "waiting" for r in journal(ledger)), timeout=60, what="the run to ask for cut on t1")
        alice = handoff("approve", str(ledger), "t1", "--yes", "--as", "alice", world=tmp_path)
        bob = handoff("approve", str(ledger), "t1", "--yes", "--as", "bob", world=tmp_path)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not [r for r in journal(ledger) if r["kind"] == "step_start"]:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    started = [r for r in journal(ledger) if r["kind"] == "step_start"]
    said = alice.stdout + alice.stderr
    assert alice.returncode == 1 and "other than the requester" in said, (
        f"alice started the LangGraph run that asked for cut, yet her approval counted as one of the two "
        f"(approve exit {alice.returncode}: {said.strip()}; bob: {bob.returncode}); steps started: "
        f"{[(r['step'], r.get('msg')) for r in started]}")
    assert not started, started
