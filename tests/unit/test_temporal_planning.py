"""The Claude planner inside the Temporal `decide` activity (engine.temporal.planning), on a
real ledger, with the real anthropic SDK talking to the fake Messages API (no server).

The planner's note reserve (one more round would eat the tokens its note needs, below
`handoff_at`) ends a built-in session; on Temporal it is a hand-off: the decision says
`handoff`, the workflow writes the note and continues as new, it never ends the run.
"""

from __future__ import annotations

from pathlib import Path

from claude_kit import FIRST_MOVE, api, env, tool_use
from session_kit import load, tool, tool_ledger

from engine.temporal import core

WID = "handoff-00000000-0000-4000-8000-000000000002"


def test_the_note_reserve_is_a_hand_off_not_an_ending(tmp_path: Path, monkeypatch) -> None:
    steps = [{"name": "work", "from": "queued", "to": "done", "reversible": True, "timeout": 30, "run": tool("say", "{target}")}]
    ledger = tool_ledger(tmp_path, steps, {"t-1": {"state": "queued"}, "t-2": {"state": "queued"}})
    # 4,000 input tokens a call: after the first, 4,050 of 8,000 are used (51%, below handoff_at 99%),
    # but the note's request (the brief's 4,000 and 1,024 out) would no longer fit.
    rules = [{"id": "move", "match": {"last_user": FIRST_MOVE},
              "reply": {"content": [tool_use("run_step", target="{t}", step="{step}", reason="next in the runbook")],
                        "usage": {"input_tokens": 4000, "output_tokens": 50}}}]
    with api(tmp_path, rules) as fake:
        for key, value in env(tmp_path, fake).items():
            if key.startswith(("ANTHROPIC_", "HOME", "XDG_CONFIG_HOME")):
                monkeypatch.setenv(key, value)  # the worker's environment: the credential and the fake's address
        job = {"ledger": str(ledger), "workflow_id": WID, "address": "127.0.0.1:1", "namespace": "default",
               "task_queue": "q", "actor": None, "poll": 30.0, "heartbeat_timeout": 20.0,
               "planner": {"name": "claude", "model": None, "max_tokens": 8000, "handoff_at": 0.99, "backoff": 5.0}}
        assert core.take_lease(job)["code"] == 0
        before = load(ledger)["revision"]
        decided = core.decide(job, [], {})
    assert "ending" not in decided, decided  # the run goes on: a hand-off, then continue-as-new
    assert decided["handoff"].startswith("the token budget reached the hand-off point"), decided
    assert decided["memo"]["claude"]["used"][0] >= 4000, decided["memo"]
    data = load(ledger)
    assert data["session"]["id"] == WID and data["revision"] >= before  # still the workflow's; nothing ended it
