"""The Claude planner on Temporal: each planning turn runs inside the `decide` activity
(no temporalio import here).

"Let the agent decide the next activity": a turn builds its brief from the ledger and the
journal (engine.planners.claude, never from workflow history), and every `run_step` the
model calls goes through the same `attempt` as autopilot's proposals, so the guard, the
approval gate and the write-ahead intent run as they do for every holder; what may start
comes back to the workflow as step payloads, run by step activities under the fences.

What the planner knows between activities is a small memo the workflow carries
(`memo["claude"]`): tokens used by kind, cost, turns, the journal offset of its last
brief and a stable fingerprint of the ledger when its last turn began (a turn only when
something changed). The token budget spans the run; at `handoff_at` the decision says
`handoff`: the workflow lets running steps end, `write_note` asks the model for its note
(reviewed as a session's), and the workflow continues as new with a fresh budget. A model
outage is journaled and answered with `retry_in` seconds (doubling, at most 5 min).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from engine.errors import HandoffError
from engine.planners.models import Usage

MAX_BACKOFF = 300.0


def _state(memo: dict[str, Any]) -> dict[str, Any]:
    return memo.setdefault("claude", {})


def attach(actor, job: dict[str, Any], memo: dict[str, Any], ledger) -> None:
    """Give `actor` the Claude planner of the job, as the memo left it. A worker without a
    credential raises UsageError (the caller ends the run with it)."""
    from engine.planners.claude import ClaudePlanner

    spec = job["planner"]
    planner = ClaudePlanner(model=spec.get("model"), max_tokens=spec.get("max_tokens"))
    planner.setup(actor, ledger)
    state = _state(memo)
    planner.used = Usage(*state.get("used", (0, 0, 0, 0)))
    planner.cost = state.get("cost", 0.0)
    planner.turns = state.get("turns", 0)
    planner._offset = state.get("offset")
    actor.planner = planner
    budget = ledger.budget
    actor.handoff_at = spec.get("handoff_at") or (budget.handoff_at if budget and budget.handoff_at else 0.75)


def _save(actor, memo: dict[str, Any]) -> None:
    p = actor.planner
    _state(memo).update(used=[p.used.input, p.used.output, p.used.cache_read, p.used.cache_write], cost=p.cost,
                        turns=p.turns, offset=p._offset)


def fingerprint(ledger, running: list[str]) -> str:
    """What a turn depends on, the same in every worker process (Python's hash() is not)."""
    targets = [(n, t.state, t.in_flight.step if t.in_flight else None, len(t.approvals), t.reason)
               for n, t in ledger.targets.items()]
    blob = json.dumps([targets, ledger.paused is not None, ledger.handoff_note, sorted(running)], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def turn(actor, job: dict[str, Any], memo: dict[str, Any], ledger, running: list[str]) -> tuple[int, int] | dict[str, Any]:
    """One planning turn when the ledger changed since the last: (started, gated), or a
    decision for the workflow: {"handoff"} (the budget reached handoff_at) or
    {"unavailable", "retry_in"} (the model's API stayed away: wait and ask again)."""
    state = _state(memo)
    if _spent(actor):
        return {"handoff": f"the token budget reached the hand-off point ({actor.planner.spend_text()})"}
    seen = fingerprint(ledger, running)
    if state.get("seen") == seen:
        return 0, 0
    from engine.planners.client import PlannerRefused, PlannerUnavailable

    try:
        started, gated = actor.planner.turn(actor, ledger)
    except (PlannerUnavailable, PlannerRefused) as err:
        outages = state.get("outages", 0) + 1
        wait = min(MAX_BACKOFF, float(job["planner"].get("backoff", 5.0)) * 2 ** (outages - 1))
        state["outages"] = outages
        _save(actor, memo)
        actor.out.say(f"the planner is unavailable ({err}); the workflow starts nothing new and asks again in {wait:g} s "
                      f"(outage {outages})", kind="planner_unavailable", retry_in=wait)
        return {"unavailable": str(err), "retry_in": wait}
    if state.pop("outages", None):
        actor.out.say("the planner answers again; planning goes on", kind="planner_back")
    if actor.settling:  # an approval was still being recorded: decide again though the ledger is the same
        actor.settling = False
    else:
        state["seen"] = seen  # as a session's planner: the ledger when this turn began
    _save(actor, memo)
    if _spent(actor):  # the turn itself reached it: what it started runs, then the note
        return {"handoff": f"the token budget reached the hand-off point ({actor.planner.spend_text()})"}
    return started, gated


def _spent(actor) -> bool:
    """The planner's own test (engine.planners.claude): the hand-off point is reached, or
    one more round would leave no room for the note's request. Either way the run hands
    off with its note and continues as new; the reserve is not an ending of the workflow."""
    spent = actor.planner._spent(actor)
    if spent and actor.ending is not None and actor.ending == actor.planner.reserve_ending:
        actor.ending = None  # the planner's session ending, which here is a continue-as-new
    return spent


def write_note(actor, job: dict[str, Any], memo: dict[str, Any], why: str) -> str:
    """At the hand-off point: the model's note (or the engine's), reviewed and stored; the
    note as stored. The next run starts with a fresh budget and this note to compare."""
    ledger = actor.store.read()
    try:
        attach(actor, job, memo, ledger)
    except HandoffError:
        note = None
    else:
        note = actor.planner.final_note(actor, why)
        _save(actor, memo)
    text, _problems, _rev = actor.store_note(note, ending=why)
    actor.out.say(f"{why}: the planner's session ends here with its note; the workflow continues as new with a fresh "
                  "token budget", kind="handoff", budget_handoff=True)
    return text
