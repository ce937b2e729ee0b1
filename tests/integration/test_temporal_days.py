"""The Temporal runtime over days, against a real dev server and worker processes.

- bounded history: a wait of many idle cycles (an idle timer of 0.1 s and a history limit
  of 100 events stand in for days) ends in continue-as-new, never a termination; the run
  then finishes after the approvals with every irreversible step started once. The events
  one idle cycle costs are measured from the server's history and printed;
- honest endings: a workflow ended by `temporal workflow terminate` is shown as ended by
  `handoff status` (text and --json) and by `handoff approve`'s message, which names the
  command to run; the worker's lease keeper journals the end and pages. Before that, an
  edit made outside the engine wakes the waiting workflow (the lease keeper's re-read), and
  the server shows what it waits on (its current details) and which ledger (its memo).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import journal, load, tool, tool_ledger  # noqa: E402
from temporal_kit import Server, Workers, decisions, handoff_run, history, queue, runs, shown, temporal_binary  # noqa: E402

TARGETS = ("t-1", "t-2", "t-3")
RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "temporal"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("temporal-days"))
    yield s
    s.stop()


def _ledger(tmp: Path) -> Path:
    """Three targets: a reversible prep, then an irreversible cut that waits for a person;
    pages go to tool.py (its argv.log shows them)."""
    steps = [{"name": "prep", "from": "queued", "to": "ready", "reversible": True, "timeout": 30, "run": tool("say", "prep", "{target}")},
             {"name": "cut", "from": "ready", "to": "done", "reversible": False, "timeout": 30, "run": tool("say", "cut", "{target}")}]
    return tool_ledger(tmp, steps, {name: {"state": "queued"} for name in TARGETS},
                       notify=[{"run": tool("say", "page"), "on": ["workflow_ended"]}])


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _awaiting(ledger: Path) -> list[str]:
    return [n for n, t in load(ledger)["targets"].items() if t.get("state") == "awaiting_approval"]


def _start(ledger: Path, server: Server, q: str, world: Path, **extra: str) -> str:
    started = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                          "--task-queue", q, world=world, **extra)
    assert started.returncode == 0, started.stdout + started.stderr
    return f"handoff-{load(ledger)['id']}"


def test_a_long_wait_continues_as_new_and_finishes(tmp_path: Path, server: Server) -> None:
    ledger, world, q = _ledger(tmp_path), tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    try:
        wid = _start(ledger, server, q, world, HANDOFF_TEMPORAL_IDLE="0.1", HANDOFF_TEMPORAL_HISTORY_MAX="100")
        _wait_for(lambda: len(_awaiting(ledger)) == len(TARGETS), 60, "every target to wait for its approval")
        # Days of waiting, compressed: the idle timer fires every 0.1 s and each run ends at 100 events.
        _wait_for(lambda: Counter(r[0] for r in runs(server.address, wid))["CONTINUED_AS_NEW"] >= 2, 120,
                  "two continue-as-new")
        woke = []
        for name in _awaiting(ledger):
            approved = handoff_run("approve", str(ledger), name, "--yes", "--as", "human-oncall", world=world)
            assert approved.returncode == 0, approved.stderr
            woke.append(approved.stderr)
        # Each approval signalled the workflow; the last may find it done already: it looks every 0.1 s
        # here, so it can see that approval, run the cutover and hand off before the signal lands.
        assert f"signalled temporal workflow {wid}" in woke[0], woke
        assert all(f"signalled temporal workflow {wid}" in w
                   or f"temporal workflow {wid} completed before the signal reached it: it had handed off" in w
                   for w in woke), woke
        _wait_for(lambda: load(ledger).get("session") is None, 90, "the workflow to hand off")
        chain = _wait_for(lambda: (lambda c: c if c[-1][0] != "RUNNING" else None)(runs(server.address, wid)), 30,
                          "the last run to close")
    finally:
        workers.stop()
    statuses = Counter(r[0] for r in chain)
    assert statuses["COMPLETED"] == 1 and statuses["CONTINUED_AS_NEW"] == len(chain) - 1, chain
    assert all(length <= 100 + 40 for status, length, _ in chain if status == "CONTINUED_AS_NEW"), chain  # bounded
    data = load(ledger)
    assert {n: t["state"] for n, t in data["targets"].items()} == {n: "done" for n in TARGETS}
    cuts = [json.loads(line) for line in (ledger.parent / "argv.log").read_text().splitlines() if '"cut"' in line]
    assert sorted(c[2] for c in cuts) == sorted(TARGETS), cuts  # each irreversible step ran exactly once
    starts = Counter(r["target"] for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "cut")
    assert starts == Counter(TARGETS), starts
    assert "nothing left to do" in data["handoff_note"] or data["handoff_note_by"] == f"agent:{wid}"
    _record(history(server.address, wid), "completed-local-decide")  # the last run: approvals, steps, the handoff
    print(f"temporal history: {len(chain)} runs, events per run {[n for _, n, _ in chain]}")
    # What one idle cycle of waiting costs: in a run that only waited, events from its first
    # decision to its last, over the cycles between them.
    events = history(server.address, wid, run_id=chain[1][2]).events
    decides = decisions(events)
    assert len(decides) >= 4, decides
    per_cycle = (decides[-1] - decides[0]) / (len(decides) - 1)
    assert per_cycle <= 8, per_cycle  # a timer, a workflow task and the marker of one local decide, nothing else
    print(f"temporal idle cycle: {per_cycle:.1f} events; per hour of waiting: {per_cycle * 3600 / 30:.0f} with a 30 s poll, "
          f"{per_cycle * 3600 / 600:.0f} with the 10 min idle timer (plus ~{per_cycle:.0f} per outside edit the keeper sees)")


def _record(h, name: str) -> None:
    """With HANDOFF_RECORD_TEMPORAL=1, keep the history for the replay test (tests/unit/test_temporal_replay.py)."""
    import os

    if os.environ.get("HANDOFF_RECORD_TEMPORAL") == "1":
        RECORD.mkdir(parents=True, exist_ok=True)
        (RECORD / f"{name}.json").write_text(h.to_json())


def test_a_terminated_workflow_is_shown_ended(tmp_path: Path, server: Server) -> None:
    ledger, world, q = _ledger(tmp_path), tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    try:
        wid = _start(ledger, server, q, world, HANDOFF_TEMPORAL_IDLE="600")
        _wait_for(lambda: len(_awaiting(ledger)) == len(TARGETS), 60, "every target to wait for its approval")
        # An edit made outside the engine (a target added by hand) wakes the workflow through
        # the lease keeper's re-read (every 1 s here), not its 10 min idle timer. First let the
        # keeper's poke for the engine's own last write go by: the workflow is idle after it.
        time.sleep(3)
        edited = ledger.with_name("edited.yaml")  # as an editor saves: a whole new file, renamed over
        edited.write_text(ledger.read_text().replace("targets:\n", "targets:\n  t-4:\n    state: queued\n", 1))
        edited.replace(ledger)
        _wait_for(lambda: (load(ledger)["targets"].get("t-4") or {}).get("state") == "awaiting_approval", 30, "t-4 to be prepared")
        _record(history(server.address, wid), "waiting-local-decide")
        # What the server shows of the wait: the ledger in the memo, what it waits on in its details.
        memo, details = _wait_for(lambda: (lambda m: m if "t-4 cut awaiting approval since" in m[1] else None)(
            shown(server.address, wid)), 15, "the current details")
        assert memo == {"ledger": str(ledger), "ledger_id": wid.removeprefix("handoff-"), "task": "tool-test"}, memo
        assert "t-1 cut awaiting approval since" in details and "asked by agent:" in details, details
        live = json.loads(handoff_run("status", str(ledger), "--json", world=world).stdout)["session"]
        assert live["status"] == "live", live
        killed = subprocess.run([temporal_binary(), "workflow", "terminate", "--address", server.address,
                                 "--workflow-id", wid, "--reason", "history limit reached"], capture_output=True, text=True)
        assert killed.returncode == 0, killed.stdout + killed.stderr
        # The worker's keeper learns it from its next heartbeat: it journals the end and pages.
        ended = _wait_for(lambda: [r for r in journal(ledger) if r.get("kind") == "workflow_ended"], 30, "workflow_ended")
        assert f"temporal workflow {wid} ended: terminated at" in ended[0]["msg"], ended
        assert "history limit reached" in ended[0]["msg"] and "handoff resume --ledger" in ended[0]["msg"]
        pages = _wait_for(lambda: [r for r in journal(ledger) if r.get("kind") == "page" and r.get("event") == "workflow_ended"],
                          10, "the page")
        assert pages[0]["ok"] and "ended: terminated" in (ledger.parent / "argv.log").read_text()
        on_disk = ledger.read_bytes()
        # The beat has stopped; once it is late, status asks the server.
        status = _wait_for(lambda: (lambda s: s if s["status"] != "live" else None)(
            json.loads(handoff_run("status", str(ledger), "--json", world=world).stdout)["session"]), 30, "status not live")
        assert status["status"] == "dead" and f"temporal workflow {wid} ended: terminated at" in status["detail"], status
        text = handoff_run("status", str(ledger), world=world).stdout
        assert f"session: dead - temporal workflow {wid} ended: terminated at" in text and "session: live" not in text, text
        assert ledger.read_bytes() == on_disk  # status only reads
        approved = handoff_run("approve", str(ledger), "t-1", "--yes", "--as", "human-oncall", world=world)
        assert approved.returncode == 0, approved.stderr
        assert f"temporal workflow {wid} ended: terminated at" in approved.stderr, approved.stderr
        assert f"handoff resume --ledger {ledger} --runtime temporal --temporal {server.address}" in approved.stderr
        assert "within" not in approved.stderr and "signalled" not in approved.stderr, approved.stderr
    finally:
        workers.stop()
