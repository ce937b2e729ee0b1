"""What the graph's nodes do to the ledger (no langgraph import here).

A node is a thin shell around one of these functions, and each reads the ledger afresh
and acts only through the single-step decision core every holder shares
(engine.session.actor). Nothing here remembers anything between calls: the ledger is the
only memory, so LangGraph may re-run any node (a replay, a fork, a resume re-running the
code before an `interrupt()`) and it decides again from what the ledger says now.

- `fan_out`: the plan node's choice with autopilot: the targets that may take a step
  now, at most the ledger's concurrency (its tightest "never touch more than N"), or,
  when none can, the targets waiting on an approval (each an interrupt);
- `step`: one step of one target, run inline through `Actor.attempt`; an intent a
  crashed run left in flight is settled first by its probe (an irreversible step is never
  started again: "already started (journal seq N)");
- `approval_request`: the payload of the interrupt on an irreversible edge, read only,
  or None when the target no longer waits (approved, rejected, changed).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from engine.ledger.access import open_writer
from engine.ledger.ops import rendered_command
from engine.ledger.render import approval_hash
from engine.ledger.runbook import touch_limit
from engine.ledger.stall import progress, stall_ending
from engine.planners.autopilot import Autopilot
from engine.planners.base import ProposingPlanner
from engine.session.actor import Actor
from engine.session.reconcile import settle_in_flight
from engine.session.steps import Fenced, run_intent
from engine.session.untrusted import OUTSIDE_EDIT_ENDING, flagged, stop_for_outside_edits

Job = dict[str, Any]  # ledger (location), ledger_arg (as the user named it), thread_id, holder (the lease's id), actor, planner


@dataclass(frozen=True)
class Ending:
    """Why the run ends, and the exit code it ends with."""

    why: str
    code: int

    def as_state(self) -> dict[str, Any]:
        return {"why": self.why, "code": self.code}


class GraphActor(Actor):
    """The graph run as the ledger's holder, for the length of one node: a step it starts
    runs right away, in this node's thread, fenced like every other holder's."""

    def __init__(self, job: Job, beat=None) -> None:
        handle = open_writer(job["ledger"], actor=job.get("actor"))
        super().__init__(handle, job.get("holder") or job["thread_id"], ledger_arg=job.get("ledger_arg") or job["ledger"])
        self.beat = beat  # the runtime's heartbeat: a holder that cannot beat stops acting
        self.handoff_at = 0.75  # the Claude planner's hand-off point (engine.langgraph.planning)
        self.wake = threading.Event()  # the planner's end_session sets it; the plan node decides what follows

    def budget_text_now(self) -> str:
        """For the Claude planner's brief: a graph run's budget is the model's tokens."""
        return f"a LangGraph thread; it hands off at {self.handoff_at:.0%} of the token budget"

    def _start(self, intent) -> None:
        try:
            run_intent(self, intent)
        except Fenced as why:  # run_intent journals the refusal; the node sees the run end
            self.ending = self.ending or str(why)

    @property
    def ending(self) -> str | None:
        """This node's own ending (a fence refused it), else the run's: its process was asked
        to end (SIGTERM, Ctrl-C, a hang-up), so, as in a built-in session, nothing new starts
        (engine.session.attempt), a running step's retries and polls stop, and the node ends
        the run (`fenced`)."""
        return self._ending or (self.beat.asked_to_end if self.beat is not None else None)

    @ending.setter
    def ending(self, why: str | None) -> None:
        self._ending = why

    def holds(self, ledger) -> bool:
        return ledger.session is not None and ledger.session.id == self.sid


def stopping(actor: GraphActor, ledger) -> Ending | None:
    """The run ends now: the lease is gone, a stop was asked, the ledger is paused, a target
    was changed outside the engine (each said: engine.session.untrusted). (A run
    whose process was asked to end starts nothing either: its actors' `ending` says so.)"""
    if not actor.holds(ledger):
        return Ending(f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now", 5)
    if ledger.session.stop_requested:
        return Ending(f"stop requested by {ledger.session.stop_requested_by or 'someone'}", 0)
    if ledger.paused is not None:
        return Ending(f"ledger paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}", 4)
    if flagged(ledger) and stop_for_outside_edits(actor):  # a hand edit made while it runs: as at its start
        return Ending(OUTSIDE_EDIT_ENDING, 3)
    lost = actor.beat.can_act() if actor.beat is not None else None
    if lost:
        return Ending(f"this run {lost}; it starts nothing new", 5)
    return None


def settle_left(actor: GraphActor, name: str) -> None:
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


def settle_all(actor: GraphActor) -> None:
    """Every intent a dead run left in flight, settled (the plan node runs alone in its super-step)."""
    for name, target in actor.store.read().targets.items():
        if target.in_flight is not None:
            settle_left(actor, name)


def fan_out(job: Job, idle: dict[str, str], beat=None) -> tuple[list[str], list[str], Ending | None]:
    """(targets to step now, targets whose approval to wait on, or why the run ends).
    Targets in `idle` whose digest is the ledger's now are skipped: their last attempt
    changed nothing and nothing has changed since."""
    actor = GraphActor(job, beat)
    ledger = actor.store.read()
    ending = stopping(actor, ledger)
    if ending is not None:
        return [], [], ending
    settle_all(actor)
    ledger = actor.store.read()
    now = progress(ledger)
    movable = [a.target for a in Autopilot().propose(ledger) if idle.get(a.target) != now]
    if movable:
        return movable[:touch_limit(ledger) or 1], [], None
    awaiting = [n for n, t in ledger.targets.items() if t.state == "awaiting_approval"]
    if awaiting:
        return [], awaiting, None
    return [], [], Ending(why_done(ledger), 0)


def step(job: Job, name: str, beat=None) -> tuple[bool, Ending | None, str]:
    """One step of `name` as far as the ledger allows: (did the ledger change, why the run
    ends or None, the ledger's progress digest after)."""
    actor = GraphActor(job, beat)
    ledger = actor.store.read()
    ending = stopping(actor, ledger)
    if ending is not None:
        return False, ending, progress(ledger)
    settle_left(actor, name)
    ledger = actor.store.read()
    before = ledger.revision
    target = ledger.targets.get(name)
    if not isinstance(actor.planner, ProposingPlanner):
        raise TypeError(f"the LangGraph runtime steps a target with a proposing planner, not {actor.planner.name}")
    actions = [a for a in actor.planner.propose(ledger) if a.target == name] if target is not None else []
    if actions:
        if not actor._invariants(ledger, acting=True):
            return True, Ending("an invariant paused the ledger", 4), progress(actor.store.read())
        actor.attempt(actions[0], ledger=ledger)
    after = actor.store.read()
    return after.revision != before, fenced(actor), progress(after)


def fenced(actor: GraphActor) -> Ending | None:
    """The ending a node's actor came to (a fence refused it, the planner ended it, its
    process was asked to end), if any."""
    if not actor.ending:
        return None
    return Ending(actor.ending, 5 if "lease" in actor.ending or "taken over" in actor.ending else 0)


def approval_request(job: Job, name: str) -> dict[str, Any] | None:
    """What the interrupt on `name`'s irreversible edge asks a human (target, step, argv,
    hash), read from the ledger with no side effect; None when it no longer waits."""
    handle = open_writer(job["ledger"], actor=job.get("actor"))
    ledger = handle.store.read()
    target = ledger.targets.get(name)
    if target is None or target.state != "awaiting_approval" or not target.awaiting:
        return None
    step_ = ledger.step(target.awaiting)
    if step_ is None:
        return None
    try:
        argv = rendered_command(ledger, name, step_, handle.ledger_dir)
    except Exception as err:  # noqa: BLE001 - the request still names the step; the guard will refuse it
        argv = [f"(cannot render: {err})"]
    return {"target": name, "step": step_.name, "argv": argv, "hash": approval_hash(name, target, step_, ledger_dir=handle.ledger_dir),
            "approve": f"handoff approve {job.get('ledger_arg', job['ledger'])} {name}"}


def why_done(ledger) -> str:
    """Why a run with nothing left to step ends."""
    if all(t.state == "done" for t in ledger.targets.values()):
        return "nothing left to do: every target is done"
    people = sum(1 for t in ledger.targets.values() if t.state in ("blocked", "failed"))
    return stall_ending(ledger, people)  # names the invariant that holds the fleet, if one does
