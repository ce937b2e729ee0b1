"""`--planner claude` with `--runtime temporal`: the agent decides the next activity.

Against a real dev server, worker processes and the fake Messages API (never the real
one): a proposal the guard refuses is refused and nothing runs; a 529 storm makes the
workflow wait and ask again (journaled), then planning goes on; the token budget reaches
its hand-off point, the planner writes its note (reviewed) and the workflow continues as
new with a fresh budget; the run finishes with every irreversible step started once.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

import pytest  # noqa: E402
from claude_kit import FIRST_MOVE, after_result_rule, api, env, follow_rule, messages, note_rule, tool_results, tool_use  # noqa: E402
from session_kit import journal, load, tool, tool_ledger  # noqa: E402
from temporal_kit import Server, Workers, handoff_run, queue, runs  # noqa: E402

TARGETS = ("t-1", "t-2", "t-3")
STEPS = [{"name": "prep", "from": "queued", "to": "ready", "reversible": True, "timeout": 30, "run": tool("say", "prep", "{target}")},
         {"name": "cut", "from": "ready", "to": "done", "reversible": False, "timeout": 30, "run": tool("say", "cut", "{target}")}]
NOTE = "Handoff: the planner's budget ran out mid-fleet; what is done is in the ledger, the rest goes on."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("temporal-claude"))
    yield s
    s.stop()


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def test_claude_plans_the_workflow(tmp_path: Path, server: Server) -> None:
    ledger = tool_ledger(tmp_path, STEPS, {n: {"state": "queued"} for n in TARGETS})
    world, q = tmp_path / "world", queue()
    rules = [
        note_rule(NOTE),  # first: a note request's brief also lists the moves
        # The first turn: a proposal the guard refuses (t-1 is not ready for cut), and the brief's first move.
        {"id": "bad", "times": 1, "match": {"last_user": FIRST_MOVE},
         "reply": {"content": [tool_use("run_step", target="t-1", step="cut", reason="skip ahead"),
                               tool_use("run_step", target="{t}", step="{step}", reason="{t} is {s}")]}},
        after_result_rule(),
        # Then the API is overloaded for two calls' worth of the SDK's retries (4 requests each).
        {"id": "down", "times": 8, "match": {"last_user": FIRST_MOVE}, "reply": {"status": 529, "error": {"message": "Overloaded"}}},
        follow_rule(),
    ]
    with api(tmp_path, rules) as fake:
        environ = {k: v for k, v in env(tmp_path, fake, world).items() if k.startswith(("ANTHROPIC_", "HOME", "XDG_"))}
        workers = Workers(server, q, world, tmp_path)
        workers.start(**environ)
        try:
            started = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                                  "--task-queue", q, "--planner", "claude", "--max-tokens", "9000", world=world,
                                  HANDOFF_TEMPORAL_PLANNER_BACKOFF="0.5", HANDOFF_TEMPORAL_IDLE="2")
            assert started.returncode == 0, started.stdout + started.stderr
            wid = f"handoff-{load(ledger)['id']}"
            deadline = time.monotonic() + 180
            while load(ledger).get("session") is not None or not load(ledger).get("handoff_note"):
                assert time.monotonic() < deadline, Counter(r.get("kind") for r in journal(ledger))
                for name, t in load(ledger)["targets"].items():
                    if t.get("state") == "awaiting_approval":
                        handoff_run("approve", str(ledger), name, "--yes", "--as", "human-oncall", world=world)
                time.sleep(0.5)
            chain = _wait_for(lambda: (lambda c: c if c[-1][0] != "RUNNING" else None)(runs(server.address, wid)), 30,
                              "the last run to close")
        finally:
            workers.stop()
        requests = messages(fake)
    records = journal(ledger)
    data = load(ledger)
    assert {n: t["state"] for n, t in data["targets"].items()} == {n: "done" for n in TARGETS}, data["targets"]
    # The guard refused the bad proposal, and said so to the model.
    refused = [b for r in requests for b in tool_results(r) if "refused" in json.dumps(b)]
    assert refused and "t-1" in json.dumps(refused[0]), refused
    cuts = [json.loads(line) for line in (ledger.parent / "argv.log").read_text().splitlines() if '"cut"' in line]
    assert sorted(c[2] for c in cuts) == sorted(TARGETS), cuts  # each irreversible step ran exactly once
    # The storm: journaled waits, then planning went on.
    outages = [r for r in records if r.get("kind") == "planner_unavailable"]
    assert len(outages) >= 2 and "asks again in" in outages[0]["msg"], outages
    assert any(r.get("kind") == "planner_back" for r in records)
    assert [r["status"] for r in requests].count(529) == 8
    # The budget's hand-off point: the planner's note, reviewed, then a fresh run with a fresh budget.
    handoffs = [r for r in records if r.get("kind") == "handoff" and r.get("budget_handoff")]
    assert handoffs, Counter(r.get("kind") for r in records)
    reviews = [r for r in records if r.get("kind") == "note_review" and r.get("author") == "claude"]
    assert reviews, [r["msg"] for r in records if r.get("kind") == "note_review"]
    assert any(NOTE in (r.get("text") or "") for r in records if r.get("kind") == "note"), "the planner's note was stored"
    statuses = Counter(r[0] for r in chain)
    assert statuses["CONTINUED_AS_NEW"] >= 1 and statuses["COMPLETED"] == 1 and "TERMINATED" not in statuses, chain
    assert data["handoff_note_by"] == f"agent:{wid}" and data["handoff_note"].startswith(NOTE), data["handoff_note"]
    assert not [r for r in records if "wrote no handoff note" in r.get("msg", "")]
