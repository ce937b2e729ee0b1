"""The brief: what a planning model is told at the start of every turn, built from the ledger.

The article's rule is that the agent "remembers by writing state to a ledger", never by
re-reading a transcript; so each turn starts from this text alone: the counts, the
runbook, what is in flight, what waits on whom, invariants with their values, which
targets can move and by which steps, the handoff note, and what the journal says
happened since the last turn. Its size is bounded whatever the ledger holds: each list
shows its first entries and says how many more there are (a 10,000-target ledger gives
a brief of a few thousand characters; bench/brief_size.py measures it). Secrets are
redacted with the ledger's `redact:` patterns, as in the journal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.audit.redact import Redactor
from engine.codec.textsafe import one_line
from engine.ledger.invariants import InvariantStatus, evaluate
from engine.ledger.model import Ledger, Step
from engine.ledger.runbook import WAITING, touch_limit
from engine.ledger.stall import hold
from engine.ledger.touched import quiet, touched

MOVABLE_MAX = 20  # "can move now" entries shown
WAITING_MAX = 10  # targets waiting on people shown
FLIGHT_MAX = 10  # steps in flight shown
STEPS_MAX = 20  # runbook steps shown
EVENTS_MAX = 12  # journal records shown
EVENT_CHARS = 200
NOTE_CHARS = 2000
SKIPPED_KINDS = frozenset({"metric", "invariants", "planner_usage", "heartbeat"})


@dataclass
class BriefContext:
    """What the session knows beyond the ledger: its budget, slots and recent journal."""

    ledger_path: str
    session: str = ""
    statuses: list[InvariantStatus] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    budget: str = ""
    free_slots: int | None = None
    ending: str | None = None


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _more(lines: list[str], total: int) -> list[str]:
    return lines + ([f"- ... and {total - len(lines)} more"] if total > len(lines) else [])


def step_line(step: Step) -> str:
    kind = "reversible" if step.reversible else "IRREVERSIBLE (needs a human approval; proposing it pages one)"
    about = f": {_cut(step.description, 120)}" if step.description else ""
    return f"{step.name}: {step.from_} -> {step.to}, {kind}{about}"


def movable(ledger: Ledger, limit: int = MOVABLE_MAX) -> tuple[list[str], int, int]:
    """The first `limit` "target (state): step -> to, ..." lines, how many there are, and
    how many of them the touched-target limit lets start (or be asked for) now.

    Targets already mid-change come first (finishing them frees a touched slot), then
    those the touched-target limit lets start now, then those it holds back (marked)."""
    by_from: dict[str, list[Step]] = {}
    for step in ledger.steps():
        by_from.setdefault(step.from_, []).append(step)
    cap = touch_limit(ledger)
    taken = set(touched(ledger))
    held_now = len(taken)
    asked = sum(1 for n, t in ledger.targets.items() if t.state == "awaiting_approval" and n not in taken)
    ranked: list[tuple[int, str]] = []
    total = 0
    for name, t in ledger.targets.items():
        if t.in_flight is not None or t.state in WAITING:
            continue
        position = ledger.position(name)
        mid_change = name in taken
        for step in by_from.get(position, ()):
            total += 1
            line = f"- {name} ({position}): {step.name} -> {step.to}, "
            approval = next((a for a in t.approvals if a.step == step.name and not a.used_at), None)
            if step.reversible:
                line += "reversible"
            elif approval:
                line += f"IRREVERSIBLE, approved by {approval.by} at {approval.at}"
            else:
                line += "IRREVERSIBLE (needs a human approval; proposing it pages one)"
            rank = 0 if mid_change else 1
            if not mid_change and cap is not None:
                if not step.reversible and not approval and held_now + asked >= cap:
                    line += f" [not now: {held_now} touched and {asked} approval(s) asked for fill the limit of {cap}]"
                    rank = 2
                elif held_now >= cap and not quiet(step):
                    line += f" [not now: the touched limit {held_now}/{cap} is full]"
                    rank = 2
            ranked.append((rank, line))
    ranked.sort(key=lambda item: item[0])  # stable: ledger order within a rank
    return [line for _, line in ranked[:limit]], total, sum(1 for rank, _ in ranked if rank < 2)


def build(ledger: Ledger, ctx: BriefContext) -> str:
    """The brief for one turn (plain text, redacted, bounded)."""
    out: list[str] = [f"LEDGER {ctx.ledger_path}: task {ledger.task}, revision {ledger.revision}"
                      + (f", owner {ledger.owner_shift}" if ledger.owner_shift else "")
                      + (f", environment {ledger.environment}" if ledger.environment else "")]
    out.append("Counts: " + (", ".join(f"{n} {s}" for s, n in ledger.counts().items()) or "no targets"))
    if ledger.paused is not None:
        out.append(f"PAUSED by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}. Nothing may start.")
    if ctx.session:
        out.append(f"This session: {ctx.session} (its own steps in flight name it)")
    if ctx.ending:
        out.append(f"THE SESSION IS ENDING: {ctx.ending}. Propose nothing new.")
    if ctx.budget:
        out.append(f"Budget: {ctx.budget}" + (f"; free step slots now: {ctx.free_slots}" if ctx.free_slots is not None else ""))

    limit = touch_limit(ledger)
    out.append(f"Touched now: {len(touched(ledger))}" + (f" (limit {limit})" if limit is not None else ""))
    held = hold(ledger)
    if held is not None:  # what really keeps targets from moving (engine.ledger.stall)
        out.append(f"HELD: {_cut(held.text(), 400)}")
    statuses = ctx.statuses if ctx.statuses is not None else evaluate(ledger)
    out.append("Invariants:" if statuses else "Invariants: none")
    out.extend(f"- [{s.status}] {_cut(s.text, 160)} ({_cut(s.value, 80)})" for s in statuses[:STEPS_MAX])

    steps = ledger.steps()
    out.append("Runbook steps:" if steps else "Runbook: none (nothing can be run)")
    out.extend(_more([f"- {step_line(s)}" for s in steps[:STEPS_MAX]], len(steps)))

    flight = [(n, t.in_flight) for n, t in ledger.targets.items() if t.in_flight is not None]
    out.append(f"In flight ({len(flight)}):" if flight else "In flight: nothing")
    out.extend(_more([f"- {n}: {f.step} (session {f.session or '?'}, since {f.started_at or '?'})"
                      for n, f in flight[:FLIGHT_MAX]], len(flight)))

    waiting = [(n, t) for n, t in ledger.targets.items() if t.state in ("awaiting_approval", "blocked", "failed")]
    out.append(f"Waiting on people ({len(waiting)}):" if waiting else "Waiting on people: nobody")
    lines = []
    for n, t in waiting[:WAITING_MAX]:
        if t.state == "awaiting_approval":
            lines.append(f"- {n}: awaiting approval of {t.awaiting} (asked by {t.awaiting_by or '?'} since {t.awaiting_since or '?'})")
        else:
            lines.append(f"- {n}: {t.state}: {_cut(t.reason or 'no reason recorded', 160)}")
    out.extend(_more(lines, len(waiting)))

    can, total, _ready = movable(ledger)
    out.append(f"Can move now ({total}):" if total else "Can move now: nothing")
    out.extend(_more(can, total))

    note = (ledger.handoff_note or "").strip()
    by = f" (by {ledger.handoff_note_by} at {ledger.handoff_note_at})" if ledger.handoff_note_by else ""
    out.append(f"Handoff note{by}:" if note else "Handoff note: none")
    if note:
        out.extend("  " + line for line in (note if len(note) <= NOTE_CHARS else note[: NOTE_CHARS - 1] + "…").splitlines())

    events = [r for r in ctx.events if r.get("kind") not in SKIPPED_KINDS]
    out.append(f"Since the last turn ({len(events)} journal records):" if events else "Since the last turn: nothing new in the journal")
    shown = events[-EVENTS_MAX:]
    if len(events) > len(shown):
        out.append(f"- ... {len(events) - len(shown)} earlier records not shown (read_target shows a target's own)")
    out.extend(f"- [{str(r.get('ts', ''))[11:19]}] {_cut(r.get('msg', r.get('kind', '')), EVENT_CHARS)}" for r in shown)
    # One item a line: a newline in ledger text (a target's name or reason, a journal message) is shown as ⏎, so it
    # cannot write a line of the brief the model would take for the engine's own.
    return Redactor(ledger.redact).text("\n".join(one_line(item) for item in out))
