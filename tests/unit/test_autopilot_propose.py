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


@settings(max_examples=40, deadline=None)
@given(st.lists(TARGET, max_size=12), st.sets(st.integers(0, 11)))
def test_proposals_one_at_a_time_are_the_list(targets, busy_at):
    ledger = ledger_of(targets)
    busy = {f"db-{i}" for i in busy_at}
    assert list(Autopilot().proposals(ledger, busy)) == Autopilot().propose(ledger, busy=busy)


class _Full:
    """Just what Actor.attempt_all reads: no slot free, every attempt recorded."""

    ending = None
    dry_run = False

    def __init__(self) -> None:
        self.attempted: list[str] = []

    def _can_start(self) -> bool:
        return False

    def attempt(self, action, ledger=None, may_start=True):
        from engine.session.attempt import Attempt

        self.attempted.append(action.target)
        return Attempt("refused", "gated elsewhere")


def test_attempt_all_stops_at_a_full_slot_only_when_every_step_is_reversible():
    from engine.session.actor import Actor

    ledger = ledger_of([{"state": "queued", "flight": False, "awaiting": None},
                        {"state": "checked", "flight": False, "awaiting": None}])
    steps = {s.name: s for s in ledger.steps()}
    pulled: list[str] = []

    def lazily(actions):
        for action in actions:
            pulled.append(action.target)
            yield action

    actions = [Action("db-0", steps["check"]), Action("db-1", steps["cutover"])]
    full = _Full()
    assert Actor.attempt_all(full, lazily(actions), ledger, all_reversible=True) == (0, 0)  # type: ignore[arg-type]
    assert pulled == ["db-0"] and full.attempted == []  # stopped at the first "busy"
    pulled.clear()
    full = _Full()
    Actor.attempt_all(full, lazily(actions), ledger)  # type: ignore[arg-type]
    assert pulled == ["db-0", "db-1"] and full.attempted == ["db-1"]  # the irreversible one is still decided
