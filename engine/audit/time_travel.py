"""The ledger as the journal says it was at a past revision, and what changed between two.

The journal does not hold whole ledger files, so a past ledger cannot be rebuilt byte
for byte; what it does record is every state change (`transition`, `reconcile`,
`block`, `retry`), every checkpoint a step reached and every approval given or taken
back, each with the revision it made. That is what is rebuilt, and said to be: a
target the journal has no record of by then is shown as "not recorded", never given a
state. Read-only: nothing here writes, and there is deliberately no replay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.codec.timefmt import parse_time
from engine.errors import UsageError

WHAT = ("rebuilt from the journal's records (state changes, checkpoints, approvals); the journal does not hold "
        "whole ledger files, so other fields are not shown")


@dataclass
class TargetThen:
    """One target's fields as the journal records them up to a revision."""

    state: str | None = None
    awaiting: str | None = None  # the step an awaiting_approval target waits on
    in_flight: str | None = None  # a step started and not yet ended
    checkpoint: str | None = None
    approvals: list[str] = field(default_factory=list)  # unused ones, "step by NAME at T"
    last: str = ""  # the last record that touched it: "seq N kind by actor"

    def as_dict(self) -> dict[str, Any]:
        """Plain data (`show --json`); a state never recorded is said to be so."""
        return {"state": self.state or "not recorded", "awaiting": self.awaiting, "in_flight": self.in_flight,
                "checkpoint": self.checkpoint, "approvals": self.approvals,
                "last_record": self.last}


def head_rev(records: list[dict[str, Any]]) -> int:
    """The highest revision any record names (0 for a journal with none)."""
    return max((r["rev"] for r in records if isinstance(r.get("rev"), int)), default=0)


def resolve_rev(records: list[dict[str, Any]], text: str) -> int:
    """REV as given (a number, or an ISO time meaning the last revision written by then);
    a UsageError (exit 2) naming the range for anything else."""
    top = head_rev(records)
    if text.strip().lstrip("-").isdigit():
        rev = int(text)
        if not 0 <= rev <= top:
            raise UsageError(f"revision {rev} is out of range: the journal records revisions 0 to {top}; nothing was changed")
        return rev
    stamp = parse_time(text)
    if stamp is None:
        raise UsageError(f"{text!r} is neither a revision (0 to {top}) nor a time like 2026-09-09T14:00Z; nothing was changed")
    revs = [r["rev"] for r in records if isinstance(r.get("rev"), int) and (parse_time(r.get("ts")) or stamp) <= stamp]
    return max(revs, default=0)


def state_at(records: Iterable[dict[str, Any]], rev: int, retry_to: dict[str, str]) -> dict[str, TargetThen]:
    """Every target the journal names, folded over the records up to revision `rev`.

    A record without a revision of its own (a gate, a step's start) counts once a later
    record with a revision at most `rev` follows it; `retry_to` maps a step to the state a
    retry of it returns to (from the runbook)."""
    out: dict[str, TargetThen] = {}
    pending: list[dict[str, Any]] = []
    for r in records:
        if isinstance(r.get("rev"), int) and r["rev"] > rev:
            break
        pending.append(r)
        if isinstance(r.get("rev"), int):
            for one in pending:
                _apply(out, one, retry_to)
            pending = []
    return out


def _apply(out: dict[str, TargetThen], r: dict[str, Any], retry_to: dict[str, str]) -> None:
    name, kind = r.get("target"), r.get("kind")
    if not isinstance(name, str) or kind in ("page", "page_none", "log", "metric"):
        return
    t = out.setdefault(name, TargetThen())
    if kind in ("transition", "reconcile") and isinstance(r.get("to"), str):
        t.state, t.in_flight = r["to"], None
        t.awaiting = r.get("step") if t.state == "awaiting_approval" else None
    elif kind == "block":
        t.state, t.awaiting = "blocked", None
    elif kind == "retry" and r.get("step") in retry_to:
        t.state = retry_to[r["step"]]
    elif kind == "approval":
        t.approvals.append(f"{r.get('step')} by {r.get('actor')} at {r.get('at')}")
        if t.state == "awaiting_approval" and t.awaiting == r.get("step") and r.get("step") in retry_to:
            # an approval opens the gate: the target is back at the step's from-state (a
            # policy needing two people keeps it shut; the journal's next record shows which)
            t.state, t.awaiting = retry_to[r["step"]], None
    elif kind == "unapproval":
        t.approvals = [a for a in t.approvals if not a.startswith(f"{r.get('step')} ")] if r.get("step") else []
    elif kind == "step_start" and r.get("approval_by"):
        used = f"{r.get('step')} by {r.get('approval_by')} at {r.get('approval_at')}"
        t.approvals = [a for a in t.approvals if a != used]
    if kind == "step_start":
        t.in_flight = r.get("step")
    elif kind == "step_end":
        t.in_flight = None
    if r.get("checkpoint") and kind in ("transition", "reconcile"):
        t.checkpoint = str(r["checkpoint"])
    t.last = f"seq {r.get('seq')} {kind} by {r.get('actor')}"


def changes(records: list[dict[str, Any]], rev1: int, rev2: int) -> list[dict[str, Any]]:
    """The records that made revisions rev1+1 .. rev2, in journal order."""
    return [r for r in records if isinstance(r.get("rev"), int) and rev1 < r["rev"] <= rev2]


def field_diff(before: dict[str, TargetThen], after: dict[str, TargetThen]) -> list[str]:
    """`target.field: old -> new` for each rebuilt field that differs."""
    lines = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name, TargetThen()).as_dict(), after.get(name, TargetThen()).as_dict()
        for key in ("state", "awaiting", "in_flight", "checkpoint", "approvals"):
            if a[key] != b[key]:
                lines.append(f"{name}.{key}: {a[key]} -> {b[key]}")
    return lines
