"""The auditor's report: every irreversible step run in a period, from the journal alone.

    report = build(records, verdict, irreversible={"link"}, start=t0, end=t1)
    report.rows      # one per irreversible `step_start` in the period
    report.proof     # first and last seq, chain verified, breaks

A row joins a `step_start` with the `approval` record it names (target, step, hash,
approver, `at`), the `gate` that asked for it (the requester), the `step_end` with its
token (exit code, duration) and any `reconcile` of the target after it. Order is
proven by the journal's sequence as well as by the clock: timestamps have a one-second
resolution, so "approved before started" holds when the approval record comes earlier
in the journal and its `at` is not after the start. Anything missing is said, never
filled in: a start without an approval record is flagged, not dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from engine.codec.timefmt import parse_time

COLUMNS = ("seq", "target", "step", "argv", "hash", "requested_by", "approved_by", "approver_user", "verified",
           "approved_at", "started_at", "approved_before_start", "exit_code", "duration", "checkpoint",
           "reconciled_by", "flags")


@dataclass
class Row:
    """One irreversible step run: what ran, who asked, who approved and how, what came of it."""

    seq: int
    target: str
    step: str
    argv: list[str]
    hash: str
    requested_by: str
    approved_by: str
    approver_user: str
    verified: str
    approved_at: str
    started_at: str
    approved_before_start: bool
    exit_code: int | None
    duration: float | None
    checkpoint: str
    reconciled_by: str
    flags: list[str] = field(default_factory=list)


@dataclass
class Proof:
    """The period's completeness proof: which records it covers and whether the chain holds."""

    first_seq: int | None
    last_seq: int | None
    records: int
    chain_verified: bool
    breaks: list[dict[str, Any]]


@dataclass
class Report:
    """The rows and the proof, with the period they cover."""

    start: str | None
    end: str | None
    rows: list[Row]
    proof: Proof

    def as_dict(self) -> dict[str, Any]:
        """Plain data (the JSON form)."""
        return {"period": {"from": self.start, "to": self.end}, "rows": [asdict(r) for r in self.rows],
                "proof": asdict(self.proof)}


def _in(ts: Any, start: datetime | None, end: datetime | None) -> bool:
    stamp = parse_time(ts)
    if stamp is None:
        return start is None and end is None  # an undated record belongs only to "all time"
    return (start is None or stamp >= start) and (end is None or stamp <= end)


def _verified(approval: dict[str, Any]) -> str:
    """How the approver was verified, as the approval record says (never more)."""
    how = approval.get("verified")
    text = str(how) if how else "not verified (a name given with --as)"
    return text + ("; signed" if approval.get("signed") or approval.get("sig") else "")


def build(records: Iterable[dict[str, Any]], verdict, *, irreversible: set[str], start: datetime | None = None,
          end: datetime | None = None) -> Report:
    """The report over `records` (the journal in order) and `verdict` (its chain check).

    `irreversible` names the runbook's irreversible steps: a start of one without an
    approval hash is still a row (flagged), so a step that ran unapproved is not hidden."""
    records = list(records)
    order = {id(r): i for i, r in enumerate(records)}  # "before" is journal order, whatever a record's seq says
    approvals: list[dict[str, Any]] = []
    gates: list[dict[str, Any]] = []
    ends: dict[str, dict[str, Any]] = {}
    reconciles: list[dict[str, Any]] = []
    for r in records:
        kind = r.get("kind")
        if kind == "approval":
            approvals.append(r)
        elif kind == "gate":
            gates.append(r)
        elif kind == "step_end" and r.get("token"):
            ends[r["token"]] = r
        elif kind == "reconcile":
            reconciles.append(r)
    period = [r for r in records if _in(r.get("ts"), start, end)]
    rows = [_row(r, order, approvals, gates, ends, reconciles) for r in period
            if r.get("kind") == "step_start" and (r.get("approval_hash") or r.get("step") in irreversible)]
    seqs = [r["seq"] for r in period if isinstance(r.get("seq"), int)]
    proof = Proof(min(seqs, default=None), max(seqs, default=None), len(period), verdict.ok,
                  [{"seq": b.seq, "line": b.line, "why": b.why} for b in verdict.breaks])
    return Report(start.isoformat() if start else None, end.isoformat() if end else None, rows, proof)


def _row(start: dict[str, Any], order: dict[int, int], approvals, gates, ends, reconciles) -> Row:
    seq, target, step = start.get("seq", -1), start.get("target", ""), start.get("step", "")
    here = order[id(start)]
    flags: list[str] = []
    approval = next((a for a in reversed(approvals) if order[id(a)] < here and a.get("target") == target
                     and a.get("step") == step and a.get("hash") == start.get("approval_hash")
                     and a.get("actor") == start.get("approval_by") and a.get("at") == start.get("approval_at")), None)
    if not start.get("approval_hash"):
        flags.append("NO APPROVAL named by the start")
    elif approval is None:
        flags.append("the approval it names has no journal record before it")
    asked_before = order[id(approval)] if approval else here
    gate: dict[str, Any] = next((g for g in reversed(gates) if order[id(g)] < asked_before and g.get("target") == target
                 and g.get("step") == step), {})
    approved_at, started_at = str(start.get("approval_at") or ""), str(start.get("ts") or "")
    a_at, s_at = parse_time(approved_at), parse_time(started_at)
    approval = approval or {}
    before = bool(approval) and a_at is not None and s_at is not None and a_at <= s_at
    if approval and not before:
        flags.append("approved_at is not before started_at")
    if approval and approval.get("actor") == gate.get("actor"):
        flags.append("the requester approved it")
    end = ends.get(start.get("token") or "", {})
    if not end:
        flags.append("no step_end recorded")
    later = [f"{r.get('actor')}: {r.get('msg')}" for r in reconciles if r.get("target") == target and order[id(r)] > here]
    return Row(seq, target, step, list(start.get("argv") or []), str(start.get("approval_hash") or ""),
               str(gate.get("actor") or ""), str(start.get("approval_by") or ""), str(approval.get("user") or ""),
               _verified(approval) if approval else "", approved_at, started_at, before, end.get("exit_code"),
               end.get("duration"), str(approval.get("checkpoint") or ""), "; ".join(later), flags)
