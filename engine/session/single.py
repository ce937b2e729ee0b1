"""One guarded step on one target: `handoff run LEDGER TARGET [STEP]`.

The same decision core as a session (engine.session.actor), for one step, run inline:
settle what a dead holder left in flight on the target, verify its checkpoint, pick the
one step the runbook allows (or the one named), read the invariants, then attempt it:
the guard refuses it, gates it behind a human approval (and pages), or writes the
intent ahead and runs it fenced, recording outcome, evidence and checkpoint.

Exit codes (a contract; Claude Code reads them through its Bash tool):
0 ran and succeeded; 1 nothing ran (refused, or now awaiting approval: who was paged and
the `handoff approve` command are said); 2 usage, invalid ledger, or no single step
allowed (the candidates are listed); 3 the target's probe disagrees with the ledger, or a
target was changed outside the engine (until `handoff reconcile`);
4 paused; 5 another holder has the lease; 7 it ran and failed.
"""

from __future__ import annotations

from engine.errors import NoSuchStep, NoSuchTarget, UsageError
from engine.planners.autopilot import Action
from engine.session.actor import Actor
from engine.session.probes import find_step_processes
from engine.session.reconcile import settle_in_flight, verify_target
from engine.session.steps import Fenced, run_intent
from engine.session.untrusted import stop_for_outside_edits

RAN, NOTHING_RAN, USAGE, DRIFT, PAUSED, LEASE_HELD, FAILED = 0, 1, 2, 3, 4, 5, 7


class StepActor(Actor):
    """An Actor that runs the one step it starts right away, in this process."""

    outcome = None  # the finished step's Outcome, once it ran
    problem = None  # what its verify said when it contradicted the step's success

    def _start(self, intent) -> None:
        try:
            run_intent(self, intent)
        except Fenced as why:  # run_intent says so and journals it; the caller sees no outcome
            self.ending = self.ending or str(why)

    def after_step(self, it, outcome, state, rev, checkpoint, problem) -> None:
        super().after_step(it, outcome, state, rev, checkpoint, problem)
        self.outcome = outcome if not problem else None
        self.problem = problem


def pick_step(ledger, name: str, step_name: str | None, *, where: str | None = None):
    """The step to run on `name`: the one named (it must exist: NoSuchStep naming the ledger
    as `where`), else the one step the runbook allows from where the target is. UsageError
    (exit 2) lists the candidates."""
    if step_name is not None:
        step = ledger.step(step_name)
        if step is None:
            raise NoSuchStep(step_name, [s.name for s in ledger.steps()], ledger=where)
        return step
    target = ledger.targets[name]
    if target.state == "awaiting_approval" and target.awaiting and ledger.step(target.awaiting):
        return ledger.step(target.awaiting)
    position = ledger.position(name)
    candidates = [s for s in ledger.steps() if s.from_ == position]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise UsageError(f"{name} is {position}, and no runbook step starts there; nothing to run")
    listed = ", ".join(f"{s.name} ({s.from_} -> {s.to})" for s in candidates)
    raise UsageError(f"{name} is {position}, where more than one step starts: {listed}; name the one to run")


def run_one(actor: StepActor, name: str, step_name: str | None) -> int:
    """Run one step through the decision core; returns the exit code (module docstring)."""
    ledger = actor.store.read()
    if name not in ledger.targets:  # gone since `handoff run` looked
        raise NoSuchTarget(name, ledger.targets, ledger=actor.ledger_arg)
    inflight = ledger.targets[name].in_flight
    if inflight is not None:
        if inflight.token and find_step_processes(inflight.token):
            actor.out.say(f"{name}: {inflight.step} is still running (started {inflight.started_at}); "
                          "wait for it, then look again with `handoff status`", target=name, kind="refusal")
            return NOTHING_RAN
        settle_in_flight(actor, name, inflight)  # left by a holder that is gone: never re-run blind
        ledger = actor.store.read()
    if stop_for_outside_edits(actor):  # as a session: a target changed outside the engine is trusted by nothing
        return DRIFT
    if verify_target(actor, name):
        return DRIFT
    # Drift and a hand edit wait on a person's `handoff reconcile`: they outrank a pause (3, not 4), as
    # in every `handoff resume` runtime; what came before only read, or settled a dead holder's step.
    ledger = actor.store.read()
    if ledger.paused is not None:
        actor.out.say(f"the ledger is paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}; "
                      "nothing runs until `handoff unpause`", kind="paused")
        return PAUSED
    step = pick_step(ledger, name, step_name, where=actor.handle.display_location)
    if not actor._invariants(ledger, acting=True):
        return PAUSED  # a threshold was crossed: the ledger is paused now, and someone was paged
    result = actor.attempt(Action(name, step))
    if result.kind == "started":
        if actor.outcome is None:
            return LEASE_HELD if actor.ending and "lease" in actor.ending else NOTHING_RAN
        return RAN if actor.outcome.ok else FAILED
    if result.kind == "awaiting":
        actor.out.say(f"{name}: nothing ran; approve it with `handoff approve {actor.ledger_arg} {name}`, then run it again",
                      target=name, kind="refusal")
        return NOTHING_RAN
    actor.out.say(f"{name}: {step.name} did not run: {result.text}", target=name, kind="refusal", step=step.name)
    return NOTHING_RAN
