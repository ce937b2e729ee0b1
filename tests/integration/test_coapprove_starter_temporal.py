"""Under `approvals: {count: 2}` whoever started the run that asked is never one of the two
people (docs/ledger.md, Approval policies). A Temporal workflow's `session_start` is journaled by
the worker (its OS user, no `by`), so the person who ran `handoff resume --runtime temporal
--as alice` is recorded nowhere the requester rule looks: alice's approval counts as one of the
two and, with one other person, the irreversible step runs. A real dev server and worker."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import journal, load, tool, tool_ledger, wait_for  # noqa: E402
from temporal_kit import Server, Workers, handoff_run, queue  # noqa: E402

CUT = [{"name": "cut", "from": "queued", "to": "done", "reversible": False, "timeout": 20, "approvals": {"count": 2},
        "run": tool("say", "cut")}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("temporal"))
    yield s
    s.stop()


def test_the_starter_of_a_temporal_workflow_is_not_one_of_two_approvers(tmp_path: Path, server: Server) -> None:
    ledger = tool_ledger(tmp_path, CUT, {"t1": {"state": "queued"}})
    q = queue()
    workers = Workers(server, q, tmp_path, tmp_path)
    workers.start()
    try:
        started = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, "--as", "alice", world=tmp_path)
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: load(ledger)["targets"]["t1"].get("state") == "awaiting_approval", timeout=90,
                 what="the workflow to ask for cut on t1")
        alice = handoff_run("approve", str(ledger), "t1", "--yes", "--as", "alice", world=tmp_path)
        bob = handoff_run("approve", str(ledger), "t1", "--yes", "--as", "bob", world=tmp_path)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not [r for r in journal(ledger) if r["kind"] == "step_start"]:
            time.sleep(0.2)
        handoff_run("stop", str(ledger), "--as", "carol", world=tmp_path)
    finally:
        workers.stop()
    ran = [r for r in journal(ledger) if r["kind"] == "step_start"]
    said = alice.stdout + alice.stderr
    assert alice.returncode == 1 and "other than the requester" in said, (
        f"alice started the Temporal workflow that asked for cut, yet her approval counted as one of the two "
        f"(approve exit {alice.returncode}: {said.strip()}; bob: {bob.returncode}); steps started: "
        f"{[(r['step'], r.get('msg')) for r in ran]}")
    assert not ran, ran
