"""Under `approvals: {count: 2}` whoever started the run that asked is never one of the two
people (docs/operating.md: "never the requester: the session that asked and whoever started
it"; docs/ledger.md, Approval policies). A Temporal workflow's session id is its workflow id,
`handoff-<ledger id>`, the same for every run of the ledger, so the last `session_start` of that
id names whoever started the ledger last. Who started the run that asked is written with the
request (the target's `awaiting_started_by`, the `gate` record): once alice's workflow asked for
`cut` and was stopped (`handoff stop`), and bob started the ledger again on Temporal (the shift
change the product is for), alice is still a requester and her approval is refused; `cut` does
not run on dave's alone."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
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


def test_the_starter_of_the_asking_workflow_stays_a_requester_after_another_person_restarts_it(
        tmp_path: Path, server: Server) -> None:
    ledger = tool_ledger(tmp_path, CUT, {"t1": {"state": "queued"}})
    q = queue()
    workers = Workers(server, q, tmp_path, tmp_path)
    workers.start()

    def run_as(who: str):
        return handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                           "--task-queue", q, "--as", who, world=tmp_path)

    def starts() -> int:
        return len([r for r in journal(ledger) if r["kind"] == "session_start"])

    try:
        first = run_as("alice")
        assert first.returncode == 0, first.stdout + first.stderr
        wait_for(lambda: load(ledger)["targets"]["t1"].get("state") == "awaiting_approval", timeout=90,
                 what="alice's workflow to ask for cut on t1")
        asked_by = load(ledger)["targets"]["t1"].get("awaiting_by")
        stopped = handoff_run("stop", str(ledger), "--as", "carol", world=tmp_path)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        wait_for(lambda: load(ledger).get("session") is None, timeout=90, what="alice's workflow to end")
        deadline = time.monotonic() + 90
        while starts() < 2 and time.monotonic() < deadline:  # until alice's workflow has closed, bob's start attaches
            second = run_as("bob")
            assert second.returncode == 0, second.stdout + second.stderr
            try:
                wait_for(lambda: starts() >= 2, timeout=5, what="bob's workflow to start")
            except AssertionError:
                pass
        wait_for(lambda: starts() >= 2 and load(ledger).get("session") is not None, timeout=60,
                 what="bob's workflow to hold the ledger")
        alice = handoff_run("approve", str(ledger), "t1", "--yes", "--as", "alice", world=tmp_path)
        dave = handoff_run("approve", str(ledger), "t1", "--yes", "--as", "dave", world=tmp_path)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not [r for r in journal(ledger) if r["kind"] == "step_start"]:
            time.sleep(0.2)
        handoff_run("stop", str(ledger), "--as", "carol", world=tmp_path)
    finally:
        workers.stop()
    ran = [r for r in journal(ledger) if r["kind"] == "step_start"]
    said = alice.stdout + alice.stderr
    assert alice.returncode == 1 and "other than the requester" in said, (
        f"alice started the Temporal workflow that asked for cut (awaiting_by {asked_by}, now "
        f"{load(ledger)['targets']['t1'].get('awaiting_by')}); after bob started the ledger again her approval "
        f"counted (approve exit {alice.returncode}: {said.strip()}; dave: {dave.returncode}); steps started: "
        f"{[(r['step'], r.get('msg')) for r in ran]}")
    assert not ran, ran
