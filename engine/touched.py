"""Which targets are *touched*: mid-change in the real world, or with a step running.

From its first irreversible step until it is done a target is touched, and a blocked or
failed one stays touched (the world is half-changed); so is any target with a step in
flight. This is what "concurrently" means in an invariant like "never touch more than
2 dbs concurrently".
"""

from __future__ import annotations

from engine.model import Ledger

# Without a runbook, the article's own in-between states are the touched ones.
_DEFAULT_TOUCHED = frozenset({"in_progress", "replicating", "verified", "awaiting_approval"})


def touched_states(ledger: Ledger) -> frozenset[str]:
    """States that lie at or after the `to` of an irreversible step, short of done."""
    steps = ledger.steps()
    if not steps:
        return _DEFAULT_TOUCHED
    graph: dict[str, set[str]] = {}
    for step in steps:
        graph.setdefault(step.from_, set()).add(step.to)
    seen: set[str] = set()
    stack = [s.to for s in steps if not s.reversible]
    while stack:
        state = stack.pop()
        if state in seen or state == "done":
            continue
        seen.add(state)
        stack.extend(graph.get(state, ()))
    return frozenset(seen)


def is_touched(ledger: Ledger, name: str, states: frozenset[str] | None = None) -> bool:
    target = ledger.targets[name]
    if target.in_flight is not None:
        return True
    if target.state == "done":
        return False
    if target.state in ("blocked", "failed"):
        return target.touched_at is not None
    return ledger.position(name) in (states if states is not None else touched_states(ledger))


def touched(ledger: Ledger) -> list[str]:
    """Names of the touched targets, in ledger order."""
    states = touched_states(ledger)
    return [name for name in ledger.targets if is_touched(ledger, name, states)]
