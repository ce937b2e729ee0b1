"""Autopilot's proposals (engine.planners.autopilot): each target's `next_step`, in ledger order,
for every mix of states, intents in flight, approvals awaited and busy targets, and a runbook
with two steps from the same state (the first in runbook order is proposed)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ledger.model import Ledger
from engine.ledger.runbook import WAITING, next_step
from engine.planners.autopilot import Action, Autopilot

STATES = ["queued", "checked", "done", "failed", "blocked", "awaiting_approval", "verified"]
TARGET = st.fixed_dictionaries({"state": st.sampled_from(STATES), "flight": st.booleans(),
                                "awaiting": st.sampled_from([None, "check", "sync", "cutover"])})


def ledger_of(targets: list[dict]) -> Ledger:
    data = {
        "task": "t", "owner_shift": "s",
        "runbook": {"steps": [
            {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true"]},
            {"name": "sync", "from": "checked", "to": "done", "reversible": True, "run": ["true"]},
            {"name": "cutover", "from": "checked", "to": "done", "reversible": False, "run": ["true"]},
        ]},
        "targets": {},
    }
    for i, t in enumerate(targets):
        entry: dict = {"state": t["state"]}
        if t["flight"]:
            entry["in_flight"] = {"step": "check"}
        if t["state"] == "awaiting_approval" and t["awaiting"]:
            entry["awaiting"] = t["awaiting"]
        data["targets"][f"db-{i}"] = entry
    return Ledger.model_validate(data)


@settings(max_examples=80, deadline=None)
@given(st.lists(TARGET, max_size=12), st.sets(st.integers(0, 11)))
def test_proposals_are_each_targets_next_step_in_ledger_order(targets, busy_at):
    ledger = ledger_of(targets)
    busy = {f"db-{i}" for i in busy_at}
    want = []
    for name, target in ledger.targets.items():
        if name in busy or target.in_flight is not None or target.state in WAITING:
            continue
        step = next_step(ledger, name)
        if step is not None:
            want.append(Action(name, step))
    assert Autopilot().propose(ledger, busy=busy) == want
