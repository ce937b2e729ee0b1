"""Checks of the runbook as a state machine: can every step be reached, can every
target move on, does every path end at `done`."""

from __future__ import annotations

from engine.checks.context import Context
from engine.checks.finding import ERROR, WARNING, closest, did_you_mean, names
from engine.ledger.model import BASE_STATES, Ledger, Step

PEOPLE_STATES = frozenset({"failed", "blocked"})  # a target here waits on a person, not on a step


def reach(starts: set[str], steps: list[Step]) -> set[str]:
    """Every state a target starting in `starts` can get to by runbook steps."""
    seen, todo = set(starts), list(starts)
    while todo:
        state = todo.pop()
        for step in steps:
            if step.from_ == state and step.to not in seen:
                seen.add(step.to)
                todo.append(step.to)
    return seen


def _retry_points(ledger: Ledger) -> set[str]:
    """Where failed targets go back to on `handoff retry`: the `from` of the step that failed."""
    points = set()
    for target in ledger.targets.values():
        if target.state == "failed" and target.evidence is not None and target.evidence.step:
            step = ledger.step(target.evidence.step)
            if step is not None:
                points.add(step.from_)
    return points


def check_flow(ctx: Context) -> None:
    ledger = ctx.ledger
    steps = ledger.steps()
    leaves = {s.from_ for s in steps}
    declared = set(BASE_STATES) | set(ledger.runbook.states if ledger.runbook else []) | {s.to for s in steps}
    positions = {name: ledger.position(name) for name, t in ledger.targets.items() if t.state != "done"}
    moving = {p for p in positions.values() if p not in PEOPLE_STATES}
    retry = _retry_points(ledger)
    # A new target starts queued, so anything reachable from there is reachable.
    reachable = reach({"queued"} | moving | retry, steps)
    for index, step in enumerate(steps):
        if step.from_ in reachable:
            continue
        at = ("runbook", "steps", index, "from")
        if step.from_ not in declared and step.from_ not in positions.values():
            ctx.add(ERROR, f'runbook step {step.name} starts from "{step.from_}", a state no step leads to and no '
                    "target is in: it can never run", *at, code="from-unknown",
                    suggestion=did_you_mean(step.from_, declared - {step.from_}, what="states"))
        else:
            ctx.add(ERROR, f'runbook step {step.name} starts from "{step.from_}", which no target can reach: none is '
                    "there and no step leads there from where the targets are", *at, code="from-unreachable",
                    suggestion=f"add a step with `to: {step.from_}`, or start {step.name} where targets arrive")
    stuck = _stuck(positions, leaves)
    for state, who in stuck.items():
        one = len(who) == 1
        guess = closest(state, leaves)
        typo = next((s for s in steps if guess and s.from_ == guess and guess not in declared), None)
        ctx.add(ERROR, f'{names(who)} {"is" if one else "are"} in "{state}", which no runbook step leaves: '
                f'{"it" if one else "they"} can never finish', "targets", who[0], "state", code="target-stuck",
                suggestion=f'runbook step {typo.name} starts from "{guess}": if that should be "{state}", correct it '
                "there" if typo else f"add a step with `from: {state}`, or record where "
                f"{'it really is' if one else 'they really are'} with `handoff reconcile TARGET --to STATE --reason ...`")
    # From where targets are, the steps must lead to done: a runbook whose steps only go round
    # (queued -> checked -> queued) keeps a session busy until its budget is spent.
    circling: dict[str, list[str]] = {}
    for name, state in positions.items():
        ahead = reach({state}, steps)
        if state in moving and state not in stuck and "done" not in ahead and ahead <= leaves:  # (a dead end: warned below)
            circling.setdefault(state, []).append(name)
    for state, who in circling.items():
        first = next(i for i, s in enumerate(steps) if s.from_ == state)  # not stuck: a step leaves it
        ctx.add(ERROR, f'the runbook steps from "{state}" never lead to done, only round: {names(who)} can never '
                "finish", "runbook", "steps", first, "from", code="never-done",
                suggestion="add a step towards done (`to: done`) from a state these steps reach")
    for index, step in enumerate(steps):
        state = step.to
        if state in leaves or state == "done" or state in PEOPLE_STATES or state in stuck:
            continue
        if any(s.to == state for s in steps[:index]):
            continue  # said once per state
        ctx.add(WARNING, f'runbook step {step.name} leads to "{state}", which no step leaves and is not done: '
                "targets that get there stop for good", "runbook", "steps", index, "to", code="dead-end",
                suggestion=f"add a step from {state} towards done, or end {step.name} at done")
    _unused(ctx, steps, positions, moving | retry, reachable)


def _stuck(positions: dict[str, str], leaves: set[str]) -> dict[str, list[str]]:
    """Targets sitting (not done, not waiting on a person) where no step starts, by state."""
    stuck: dict[str, list[str]] = {}
    for name, state in positions.items():
        if state not in PEOPLE_STATES and state != "done" and state not in leaves:
            stuck.setdefault(state, []).append(name)
    return stuck


def _unused(ctx: Context, steps: list[Step], positions: dict[str, str], starts: set[str], reachable: set[str]) -> None:
    """Steps no target of this ledger will ever take (a hint, not a stall)."""
    if not positions:
        return  # every target is done: nothing is left to use them
    if any(state == "blocked" for state in positions.values()):
        return  # a blocked target may be put anywhere by a person; no step is surely unused
    used = reach(starts, steps)
    for index, step in enumerate(steps):
        if step.from_ in reachable and step.from_ not in used:
            ctx.add(WARNING, f'no target will ever use runbook step {step.name}: none is in "{step.from_}" or can get '
                    "there", "runbook", "steps", index, "name", code="step-unused",
                    suggestion="remove the step, or ignore this if targets will be added")
