"""Honest stalls: the invariant that holds the fleet, and the targets that hold it.

With "never touch more than N" full (targets mid-change, waiting on approvals, blocked
or running), nothing else may start, and "nothing can proceed without a human" or
"c2 queued, ready for check" would be half true. `hold(ledger)` says what is true: which
invariant, its N, which targets take the N places and why, and which targets could move
but may not start until one of those is done. The session's ending, its handoff note,
`handoff status` (and its `--json` as `held`) and the TUI read this one function.

An ending is only true of the ledger it was decided on: an approval given between a
runtime's decision ("nothing moves") and its look at what waits would otherwise end the
run with the approved target left behind. `moved_since` is the one test every runtime
makes before it ends for want of anything to do; `progress` is what it compares.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from engine.ledger.invariants import not_enforced, parse_all, unread_text
from engine.ledger.model import Ledger
from engine.ledger.runbook import WAITING, next_step
from engine.ledger.touched import quiet, touched

NAMES_SHOWN = 5  # holders and held targets named in the text; the JSON has them all


@dataclass
class Hold:
    """A full touched-target limit that keeps `waiting` from starting."""

    invariant: str
    limit: int
    holders: list[tuple[str, str]]  # (target, why it takes a place), ledger order
    waiting: list[str]  # targets that could move, held back by the limit

    def text(self) -> str:
        """`invariant "never touch more than 2 dbs concurrently" holds the fleet: 2 of 2 places
        taken by db-1 (awaiting approval of cutover), db-2 (blocked); db-3, db-4 cannot
        start until one of them is done`"""
        held = [f"{name} ({why})" for name, why in self.holders]
        return (f'invariant "{self.invariant}" holds the fleet: {len(self.holders)} of {self.limit} places taken by '
                f"{_names(held)}; {_names(self.waiting)} cannot start until one of them is done")

    def as_dict(self) -> dict:
        """The `held` object of `handoff status --json`."""
        return {"invariant": self.invariant, "limit": self.limit,
                "holders": [{"target": n, "why": why} for n, why in self.holders], "waiting": list(self.waiting),
                "text": self.text()}


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:NAMES_SHOWN])
    return shown + (f" and {len(items) - NAMES_SHOWN} more" if len(items) > NAMES_SHOWN else "")


def _why(ledger: Ledger, name: str) -> str:
    t = ledger.targets[name]
    if t.in_flight is not None:
        return f"running {t.in_flight.step}"
    if t.state == "awaiting_approval":
        return f"awaiting approval of {t.awaiting or 'a step'}"
    return t.state if t.state in ("blocked", "failed") else f"{t.state}, mid-change"


def hold(ledger: Ledger) -> Hold | None:
    """The tightest "never touch more than N" invariant when it is what keeps a target that
    could move from starting (as the guard and the planner would judge it), else None."""
    limits = [(inv.limit, inv) for inv in parse_all(ledger) if inv.kind == "max_touched" and inv.limit is not None]
    if not limits:
        return None
    limit, inv = min(limits, key=lambda pair: pair[0])
    taken = touched(ledger)
    mid_change = set(taken)  # one look per target, not a rules walk per target (0.03 s at 10k)
    # An approval asked for a target not yet touched keeps its place too (Autopilot.should_ask).
    asked = [n for n, t in ledger.targets.items() if t.state == "awaiting_approval" and n not in mid_change]
    waiting = []
    for name, t in ledger.targets.items():
        if t.in_flight is not None or t.state in WAITING or name in mid_change:
            continue
        step = next_step(ledger, name)
        if step is None:
            continue
        approved = any(a.step == step.name and not a.used_at for a in t.approvals)
        if not quiet(step) and len(taken) >= limit:
            waiting.append(name)
        elif not step.reversible and not approved and len(taken) + len(asked) >= limit:
            waiting.append(name)
    if not waiting:
        return None
    holding = set(taken) | set(asked)  # once: built inside the comprehension it made status quadratic (0.7 s at 10k)
    holders = [n for n in ledger.targets if n in holding]
    return Hold(inv.text, limit, [(n, _why(ledger, n)) for n in holders], waiting)


def stall_ending(ledger: Ledger, people: int, *, rehearsal: bool = False) -> str:
    """Why a session that can start nothing ends, in the words every runtime uses (`rehearsal`: a
    dry run, which never starts an irreversible step, so what is left may be the real run's)."""
    unread = not_enforced(ledger)
    if unread is not None:
        return f"nothing can start: {unread_text(unread)} ({people} target(s) wait on people)"
    held = hold(ledger)
    if held is not None:
        return f"nothing else can start: {held.text()} ({people} target(s) wait on people)"
    if rehearsal:
        return f"the dry run can go no further: what is left is for the real run or for people ({people} target(s) wait on people)"
    return f"nothing can proceed without a human ({people} target(s) wait on people)"


def progress(ledger: Ledger) -> str:
    """The targets as far as a decision depends on them (state, checkpoint, in flight,
    approvals): a short digest. A reason or a timestamp changing is not progress."""
    view = {n: [t.state, t.checkpoint, t.in_flight is not None, len(t.approvals)] for n, t in ledger.targets.items()}
    return hashlib.sha256(json.dumps(view, sort_keys=True, default=str).encode()).hexdigest()[:16]


def moved_since(before: Ledger, after: Ledger) -> bool:
    """`after` differs from `before`, the ledger a decision was taken on, in what that
    decision depends on: decide again instead of ending on a stale "nothing moves"."""
    return after.revision != before.revision and progress(after) != progress(before)
