"""The Claude planner as the graph's plan node: the agent decides the next step.

`handoff resume --runtime langgraph --planner claude`: the plan node runs one planning
turn of engine.planners.claude on a fresh brief built from the ledger and the journal
(never from the graph's state or an old transcript). Every `run_step` the model calls
goes through the same `attempt` as autopilot's proposals (guard, approval gate,
write-ahead intent, fenced spawn), run inline in the node. What the planner knows between
turns is the small memo Temporal's workflow carries too (tokens used, cost, turns, the
journal offset of its last brief, the ledger's fingerprint when its last turn began);
here it lives in the graph state, so the checkpointer keeps the token budget across
restarts. The memo helpers are engine.temporal.planning's (no temporalio import there):
one way to attach the planner and to account for its turns, whichever runtime runs it.

A turn at the hand-off point ends the run with the model's note (reviewed as a
session's); the model's API staying away ends it with exit 6 and the engine's note.
"""

from __future__ import annotations

import copy
from typing import Any

from engine.errors import HandoffError
from engine.langgraph.nodes import Ending, GraphActor, Job, fenced, settle_all, stopping
from engine.ledger.model import Ledger
from engine.temporal import planning as shared


def turn(job: Job, memo: dict[str, Any] | None, beat=None) -> tuple[bool, Ending | None, dict[str, Any], Ledger]:
    """One planning turn: (did it start or gate anything, why the run ends or None, the new
    memo, the ledger the turn was decided on)."""
    memo = copy.deepcopy(memo or {})  # the graph's state is never changed in place
    actor = GraphActor(job, beat)
    ledger = actor.store.read()
    ending = stopping(actor, ledger)
    if ending is not None:
        return False, ending, memo, ledger
    settle_all(actor)
    ledger = actor.store.read()
    if not actor._invariants(ledger, acting=True):  # the readings the guard checks the model's proposals against
        return False, Ending("an invariant paused the ledger", 4), memo, ledger
    ledger = actor.store.read()
    try:
        shared.attach(actor, job, memo, ledger)
    except HandoffError as err:
        return False, Ending(err.message, err.exit_code), memo, ledger
    result = shared.turn(actor, job, memo, ledger, running=[])
    if isinstance(result, dict):
        if "handoff" in result:
            return False, Ending(result["handoff"], 0), memo, ledger
        return False, Ending(f"the planner's API stayed unavailable ({result['unavailable']})", 6), memo, ledger
    started, gated = result
    return started + gated > 0, fenced(actor), memo, ledger


def final_note(job: Job, memo: dict[str, Any] | None, actor: GraphActor, why: str) -> str | None:
    """The model's handoff note at the end of the run (None: the engine writes its own)."""
    try:
        shared.attach(actor, job, copy.deepcopy(memo or {}), actor.store.read())
    except HandoffError:
        return None
    return actor.planner.final_note(actor, why)
