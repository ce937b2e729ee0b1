"""The ledger as the journal says it was at a past revision, and what changed between two.

Every engine write journals a `ledger_write` record (engine.store.history): the whole
ledger the first time, then what each write changed. `engine.store.history.ledger_at` folds them to a
revision and gives the ledger's full data as written then (every field; values as
redacted in the journal; comments and layout are not kept, so it is the file's content,
not its bytes). A journal from before that, or one that lost a write's record, cannot
give the whole file for those revisions; `state_at` then folds what the other records
say (every state change, checkpoint and approval, each with the revision it made), and
a target the journal has no record of by then is shown as "not recorded", never given
a state. Read-only: nothing here writes, and there is deliberately no replay.
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


def data_diff(before: Any, after: Any, path: str = "") -> list[str]:
    """`path: old -> new` for each value that differs between two ledgers' data (mappings
    are walked key by key, anything else is compared whole)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            where = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(f"{where}: {_short(before[key])} -> (removed)")
            elif key not in before:
                out.append(f"{where}: (none) -> {_short(after[key])}")
            else:
                out.extend(data_diff(before[key], after[key], where))
        return out
    return [] if before == after else [f"{path}: {_short(before)} -> {_short(after)}"]


def _short(value: Any, limit: int = 120) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def head_rev(records: Iterable[dict[str, Any]]) -> int:
    """The highest revision any record names (0 for a journal with none)."""
    return max((r["rev"] for r in records if isinstance(r.get("rev"), int)), default=0)


def resolve_rev(records: Iterable[dict[str, Any]], text: str) -> int:
    """REV as given (a number, or an ISO time meaning the last revision written by then);
    a UsageError (exit 2) naming the range for anything else. One pass over `records`."""
    number = int(text) if text.strip().lstrip("-").isdigit() else None
    stamp = parse_time(text) if number is None else None
    top = by_then = 0
    for r in records:
        rev = r.get("rev")
        if isinstance(rev, int):
            top = max(top, rev)
            if stamp is not None and (parse_time(r.get("ts")) or stamp) <= stamp:
                by_then = max(by_then, rev)
    if number is not None:
        if not 0 <= number <= top:
            raise UsageError(f"revision {number} is out of range: the journal records revisions 0 to {top}; nothing was changed")
        return number
    if stamp is None:
        raise UsageError(f"{text!r} is neither a revision (0 to {top}) nor a time like 2026-09-09T14:00Z; nothing was changed")
    return by_then


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
    elif kind == "unapproval" and r.get("approval_by"):  # names the one approval it took back
        t.approvals = [a for a in t.approvals if a != f"{r.get('step')} by {r.get('approval_by')} at {r.get('approval_at')}"]
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


def changes(records: Iterable[dict[str, Any]], rev1: int, rev2: int) -> list[dict[str, Any]]:
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
