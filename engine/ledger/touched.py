"""Which targets are *touched*: mid-change in the real world, or with a step running.

From its first irreversible step until it is done a target is touched, and a blocked or
failed one stays touched (the world is half-changed); so is any target with a step in
flight, unless the runbook says that step does not touch (`touches: false`, only on a
reversible step: a read-only check). This is what "concurrently" means in an invariant
like "never touch more than 2 dbs concurrently".

The guard asks this for every proposal and inside every step's intent transaction, so
at 10,000 targets it must not cost a scan each time. A readers' snapshot never changes
(engine.store.file: readers share it; a transaction works on a copy), so its touched
list is computed once per snapshot (engine.ledger.sealed); a transaction's copy-on-write
ledger then only looks again at the targets it changed.
"""

from __future__ import annotations

from functools import partial

from engine.ledger import sealed
from engine.ledger.model import Ledger, Target

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


# The key in `_awaiting_from`'s map under which the steps that do not touch are listed
# (a step name never contains a NUL): one rules map, so the sealed cache keys on it too.
_QUIET = "\0quiet"


def _target_touched(target: Target, states: frozenset[str], awaiting_from: dict[str, str]) -> bool:
    if target.in_flight is not None and target.in_flight.step not in awaiting_from.get(_QUIET, ()):
        return True
    state = target.state
    if state == "done":
        return False
    if state in ("blocked", "failed"):
        return target.touched_at is not None
    if state == "awaiting_approval" and target.awaiting:  # where guards see it: Ledger.position
        state = awaiting_from.get(target.awaiting, state)
    return state in states


def quiet(step) -> bool:
    """Running `step` does not touch its target: `touches: false` on a reversible step."""
    return step.reversible and not step.touches


def _awaiting_from(ledger: Ledger) -> dict:
    out: dict = {}
    for step in ledger.steps():
        out.setdefault(step.name, step.from_)  # Ledger.step: the first of that name
    names = tuple(sorted({s.name for s in ledger.steps() if quiet(s)}))
    if names:
        out[_QUIET] = names
    return out


def is_touched(ledger: Ledger, name: str, states: frozenset[str] | None = None) -> bool:
    """Is target `name` touched now?"""
    return _target_touched(ledger.targets[name], states if states is not None else touched_states(ledger), _awaiting_from(ledger))


def _scan(items, states: frozenset[str], awaiting_from: dict[str, str]) -> list[str]:
    return [name for name, target in items if _target_touched(target, states, awaiting_from)]


def touched(ledger: Ledger) -> list[str]:
    """Names of the touched targets, in ledger order."""
    states, awaiting_from = touched_states(ledger), _awaiting_from(ledger)
    rules = ("touched", states, tuple(sorted(awaiting_from.items())))
    found = sealed.names(ledger.targets, rules, partial(_target_touched, states=states, awaiting_from=awaiting_from))
    if found is not None:
        return found
    # Read without views or copies: this only looks (engine.store.cow.shared_items).
    return _scan(dict.items(ledger.targets), states, awaiting_from)
