"""The auditor's report: every irreversible step run in a period, from the journal alone.

    report = build(records, verdict, irreversible={"link"}, start=t0, end=t1)
    report.rows      # one per irreversible `step_start` in the period
    report.proof     # first and last seq, chain verified, breaks, gaps

A row joins a `step_start` with the `approval` record it names (target, step, hash,
approver, `at`), the `gate` that asked for it (the requester), the `step_end` with its
token (exit code, duration), the outcome the session recorded next for the target (the
state and the checkpoint its verify probe printed, or the discrepancy it found) and any
`reconcile` of the target after it. The proof lists every `journal_gap` record: a change
the ledger made whose own record could not be written is a hole, said. Order is
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
           "approved_at", "started_at", "approved_before_start", "exit_code", "duration", "verify_evidence",
           "checkpoint", "reconciled_by", "flags")


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
    verify_evidence: str  # what the session recorded after the run: state, the checkpoint its verify printed
    checkpoint: str  # the checkpoint the approval was given at
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
    gaps: list[dict[str, Any]] = field(default_factory=list)  # `journal_gap` records: a change whose record was lost

    @property
    def complete(self) -> bool:
        """No break in the chain and no record known to be lost."""
        return self.chain_verified and not self.gaps


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
    if start is None and end is None:
        return True  # all time: every record, dated or not (and no time parsed a million times)
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
    """The report over `records` (the journal in order; streamed: one pass, memory in the
    number of rows and approvals, not of records) and `verdict` (its chain check).

    `irreversible` names the runbook's irreversible steps: a start of one without an
    approval hash is still a row (flagged), so a step that ran unapproved is not hidden."""
    fold = _Fold()
    gaps: list[dict[str, Any]] = []
    first = last = None
    count = 0
    for r in records:
        fold.feed(r)
        if not _in(r.get("ts"), start, end):
            continue
        count += 1
        if isinstance(r.get("seq"), int):
            first = r["seq"] if first is None else min(first, r["seq"])
            last = r["seq"] if last is None else max(last, r["seq"])
        if r.get("kind") == "step_start" and (r.get("approval_hash") or r.get("step") in irreversible):
            fold.start_row(r)
        elif r.get("kind") == "journal_gap":
            gaps.append({"seq": r.get("seq"), "rev": r.get("rev"), "lost_kind": r.get("lost_kind"),
                         "target": r.get("target"), "error": r.get("error")})
    proof = Proof(first, last, count, verdict.ok, [{"seq": b.seq, "line": b.line, "why": b.why} for b in verdict.breaks],
                  gaps)
    return Report(start.isoformat() if start else None, end.isoformat() if end else None,
                  [fold.finish(row) for row in fold.rows], proof)


class _Fold:
    """What a row needs from the records before and after its start, kept as they pass:
    "before" is journal order, whatever a record's seq says."""

    def __init__(self) -> None:
        self.approvals: dict[tuple, dict[str, Any]] = {}  # (target, step, hash, actor, at) -> newest, with its gate
        self.gates: dict[tuple, dict[str, Any]] = {}  # (target, step) -> the newest gate
        self.open: dict[str, Row] = {}  # step token -> its row, until a step_end
        self.by_target: dict[str, list[Row]] = {}  # rows whose later reconciles are listed
        self.later: dict[int, list[str]] = {}  # id(row) -> reconciles after it
        self.unverified: dict[str, Row] = {}  # target -> its newest row with no outcome recorded yet
        self.rows: list[Row] = []

    def feed(self, r: dict[str, Any]) -> None:
        kind = r.get("kind")
        if kind == "approval":
            key = (r.get("target"), r.get("step"), r.get("hash"), r.get("actor"), r.get("at"))
            self.approvals[key] = {**r, "_gate": self.gates.get((r.get("target"), r.get("step")), {})}
        elif kind == "gate":
            self.gates[(r.get("target"), r.get("step"))] = r
        elif kind == "step_end" and r.get("token") in self.open:
            row = self.open[r["token"]]
            row.exit_code, row.duration = r.get("exit_code"), r.get("duration")
            if "no step_end recorded" in row.flags:
                row.flags.remove("no step_end recorded")
        elif kind == "reconcile":
            for row in self.by_target.get(str(r.get("target")), []):
                self.later.setdefault(id(row), []).append(f"{r.get('actor')}: {r.get('msg')}")
        if kind in ("transition", "discrepancy") and r.get("target") in self.unverified:
            row = self.unverified[r["target"]]
            if kind == "discrepancy":
                row.verify_evidence = f"DISCREPANCY (seq {r.get('seq')}): {r.get('msg')}"
            elif r.get("step") == row.step:
                seen = f", checkpoint {r['checkpoint']} (its verify)" if r.get("checkpoint") else ", no checkpoint recorded"
                row.verify_evidence = f"state {r.get('to')}{seen} (seq {r.get('seq')})"
            else:
                return
            del self.unverified[r["target"]]

    def start_row(self, start: dict[str, Any]) -> None:
        target, step = start.get("target", ""), start.get("step", "")
        flags: list[str] = []
        approval = self.approvals.get((target, step, start.get("approval_hash"), start.get("approval_by"),
                                       start.get("approval_at")))
        if not start.get("approval_hash"):
            flags.append("NO APPROVAL named by the start")
        elif approval is None:
            flags.append("the approval it names has no journal record before it")
        gate = approval["_gate"] if approval else self.gates.get((target, step), {})
        approved_at, started_at = str(start.get("approval_at") or ""), str(start.get("ts") or "")
        a_at, s_at = parse_time(approved_at), parse_time(started_at)
        approval = approval or {}
        before = bool(approval) and a_at is not None and s_at is not None and a_at <= s_at
        if approval and not before:
            flags.append("approved_at is not before started_at")
        if approval and approval.get("actor") == gate.get("actor"):
            flags.append("the requester approved it")
        flags.append("no step_end recorded")  # until one comes
        row = Row(start.get("seq", -1), target, step, list(start.get("argv") or []), str(start.get("approval_hash") or ""),
                  str(gate.get("actor") or ""), str(start.get("approval_by") or ""), str(approval.get("user") or ""),
                  _verified(approval) if approval else "", approved_at, started_at, before, None, None, "",
                  str(approval.get("checkpoint") or ""), "", flags)
        if start.get("token"):
            self.open[start["token"]] = row
        self.by_target.setdefault(target, []).append(row)
        self.unverified[target] = row
        self.rows.append(row)

    def finish(self, row: Row) -> Row:
        row.reconciled_by = "; ".join(self.later.get(id(row), []))
        if not row.verify_evidence:
            row.flags.append("no outcome recorded after the run")
        return row
