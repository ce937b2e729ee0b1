"""What the graph's nodes do to the ledger (no langgraph import here).

A node is a thin shell around one of these functions, and each reads the ledger afresh
and acts only through the single-step decision core every holder shares
(engine.session.actor). Nothing here remembers anything between calls: the ledger is the
only memory, so LangGraph may re-run any node (a replay, a fork, a resume re-running the
code before an `interrupt()`) and it decides again from what the ledger says now.

- `drive`: one target's steps, run inline through `Actor.attempt` until the target
  waits on an approval ("approve"), nothing more can move it ("next"), or the run ends;
  an intent a crashed run left in flight is settled first by its probe (an irreversible
  step is never started again: "already started (journal seq N)");
- `approval_request`: the payload of the interrupt on an irreversible edge, read only,
  or None when the target no longer waits (approved, rejected, changed).
"""

from __future__ import annotations

from typing import Any

from engine.lease.rules import HeartbeatThread
from engine.ledger.access import open_writer
from engine.ledger.guard import valid_approval
from engine.ledger.ops import rendered_command
from engine.ledger.render import approval_hash
from engine.planners.base import ProposingPlanner
from engine.session.actor import Actor
from engine.session.reconcile import settle_in_flight
from engine.session.steps import Fenced, run_intent

Job = dict[str, Any]  # ledger (location), ledger_arg (as the user named it), thread_id, actor


class GraphActor(Actor):
    """The graph run as the ledger's holder, for the length of one node: a step it starts
    runs right away, in this process, fenced like every other holder's."""

    def __init__(self, job: Job, beat: HeartbeatThread | None = None) -> None:
        handle = open_writer(job["ledger"], actor=job.get("actor"))
        super().__init__(handle, job["thread_id"], ledger_arg=job.get("ledger_arg") or job["ledger"])
        self.beat = beat  # the runtime's heartbeat: a holder that cannot beat stops acting

    def _start(self, intent) -> None:
        try:
            run_intent(self, intent)
        except Fenced as why:  # run_intent journals the refusal; the node sees the run end
            self.ending = self.ending or str(why)

    def holds(self, ledger) -> bool:
        return ledger.session is not None and ledger.session.id == self.sid


def _settle_left(actor: GraphActor, name: str) -> None:
    """An intent left in flight on `name` (this runtime died mid-node): settle it the way
    every holder does. The journal and fence decide, never the checkpoint."""
    inflight = actor.store.read().targets[name].in_flight
    if inflight is None:
        return
    started = actor.handle.journal.last_of("step_start", token=inflight.token) if inflight.token else None
    if started is not None:
        actor.out.say(f"{name}: {inflight.step} already started (journal seq {started.get('seq')}); it is never "
                      "started again: its probe decides", target=name, kind="reconcile", step=inflight.step)
    settle_in_flight(actor, name, inflight)


def drive(job: Job, name: str, beat=None) -> tuple[str, str]:
    """Run `name`'s steps as far as the ledger allows. Returns (where to, why):
    "approve" (an approval was asked for), "next" (nothing more moves it now) or "end"
    (the run ends: the lease is gone, a stop was asked, the ledger is paused)."""
    actor = GraphActor(job, beat)
    ledger = actor.store.read()
    if not actor.holds(ledger):
        return "end", f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now"
    _settle_left(actor, name)
    while True:
        ledger = actor.store.read()
        if not actor.holds(ledger):
            return "end", f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now"
        if ledger.session.stop_requested:
            return "end", f"stop requested by {ledger.session.stop_requested_by or 'someone'}"
        if ledger.paused is not None:
            return "end", f"ledger paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}"
        target = ledger.targets.get(name)
        if target is None:
            return "next", f"{name} is no longer in the ledger"
        if target.state == "awaiting_approval":
            return "approve", f"{name} waits for an approval"
        if not isinstance(actor.planner, ProposingPlanner):
            raise TypeError(f"the LangGraph runtime drives a proposing planner, not {actor.planner.name}")
        actions = [a for a in actor.planner.propose(ledger) if a.target == name]
        if not actions:
            return "next", f"{name} is {target.state}: nothing to run"
        if not actor._invariants(ledger, acting=True):
            return "end", "an invariant paused the ledger"
        result = actor.attempt(actions[0], ledger=ledger)
        if actor.ending:
            return "end", actor.ending
        if result.kind == "awaiting":
            return "approve", result.text
        if result.kind not in ("started", "settled"):
            return "next", result.text


def approval_request(job: Job, name: str) -> dict[str, Any] | None:
    """What the interrupt on `name`'s irreversible edge asks a human (target, step, argv,
    hash), read from the ledger with no side effect; None when it no longer waits."""
    handle = open_writer(job["ledger"], actor=job.get("actor"))
    ledger = handle.store.read()
    target = ledger.targets.get(name)
    if target is None or target.state != "awaiting_approval" or not target.awaiting:
        return None
    step = ledger.step(target.awaiting)
    if step is None:
        return None
    try:
        argv = rendered_command(ledger, name, step, handle.ledger_dir)
    except Exception as err:  # noqa: BLE001 - the request still names the step; the guard will refuse it
        argv = [f"(cannot render: {err})"]
    return {"target": name, "step": step.name, "argv": argv, "hash": approval_hash(name, target, step, ledger_dir=handle.ledger_dir),
            "approve": f"handoff approve {job.get('ledger_arg', job['ledger'])} {name}"}


def approved(job: Job, name: str, step_name: str) -> bool:
    """Does the ledger hold a valid approval of `step_name` on `name` now (its hash matching)?"""
    handle = open_writer(job["ledger"], actor=job.get("actor"))
    ledger = handle.store.read()
    step = ledger.step(step_name)
    return (step is not None and name in ledger.targets
            and valid_approval(ledger, name, step, ledger_dir=handle.ledger_dir)[0] is not None)

