"""Where a target stands in the runbook: its next step, what the ledger says comes next,
the states that wait on a person, and the tightest touched limit of the invariants.

Planners, the session, the note and the stall explanation all read these; none decides."""

from __future__ import annotations

from engine.ledger.invariants import parse_all
from engine.ledger.model import Ledger, Step

# Targets in these states wait on a human (or are finished); no planner proposes them.
WAITING = frozenset({"done", "failed", "blocked", "awaiting_approval"})


def touch_limit(ledger: Ledger) -> int | None:
    """The tightest "never touch more than N" invariant, or None."""
    limits = [inv.limit for inv in parse_all(ledger) if inv.kind == "max_touched" and inv.limit is not None]
    return min(limits) if limits else None


def next_step(ledger: Ledger, name: str) -> Step | None:
    """The first runbook step that starts where target `name` is."""
    position = ledger.position(name)
    for step in ledger.steps():
        if step.from_ == position:
            return step
    return None


def next_action_text(ledger: Ledger, name: str) -> str | None:
    """What the ledger should say comes next for `name` (plain English)."""
    target = ledger.targets[name]
    if target.state == "done":
        return None
    step = next_step(ledger, name)
    if step is None:
        return None
    if step.reversible:
        return f"{step.name}" + (f": {step.description}" if step.description else " (reversible)")
    return f"{step.name} (irreversible): needs a human approval first"
