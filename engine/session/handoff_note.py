"""The handoff note a session writes when it ends, generated from the ledger so it is true.

Plain English, in the order a person taking over asks: what is in flight, what waits
on whom and since when, what must not be touched and why, what comes next. It is
short on purpose (long lists are cut with "and N more"); the ledger and the journal
hold the rest.
"""

from __future__ import annotations

import re

from engine.audit.note_rules import rules_in
from engine.ledger.guard import flagged as flagged_names
from engine.ledger.guard import untrusted_text
from engine.ledger.invariants import not_enforced, unread_text
from engine.ledger.model import Ledger
from engine.ledger.runbook import WAITING, next_step
from engine.ledger.stall import hold
from engine.ledger.touched import touched

LIST_MAX = 5
def _more(items: list[str], limit: int = LIST_MAX) -> list[str]:
    if len(items) <= limit:
        return items
    return items[:limit] + [f"and {len(items) - limit} more"]


def _since(stamp: str | None) -> str:
    return f" since {stamp}" if stamp else ""


def irreversible_done(ledger: Ledger, name: str) -> list[str]:
    """Irreversible steps target `name` has already been through (by runbook order)."""
    steps = ledger.steps()
    target = ledger.targets[name]
    if target.state == "done":
        return []
    if target.state in ("blocked", "failed"):
        ev = target.evidence.step if target.evidence else None
        step = ledger.step(ev) if ev else None
        if step is not None and not step.reversible:
            index = steps.index(step)
            return [s.name for s in steps[: index + 1] if not s.reversible]
        return []
    step = next_step(ledger, name)
    upto = steps.index(step) if step is not None else len(steps)
    return [s.name for s in steps[:upto] if not s.reversible]


def _section(title: str, items: list[str]) -> list[str]:
    """A heading and one `- item` line each: a note is read at 2 AM, one fact a line."""
    return [title] + [f"- {item}." for item in items]


def still_applying(previous: str | None, ledger: Ledger) -> list[str]:
    """The previous note's rules that still hold: a target they name is not done, or they
    name none (the rule the reviewer, engine.audit.review, requires the next note to keep)."""
    judged = re.split(r"(?m)^\s*Reviewer\b", previous or "", maxsplit=1)[0]  # the reviewer's words are no rules
    out = []
    for rule in rules_in(judged):
        # A name must be in the rule at all before its word-bounded look (10,000 patterns a rule otherwise).
        names = [n for n in ledger.targets if n in rule and re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", rule)]
        if names and all(ledger.targets[n].state == "done" for n in names):
            continue
        out.append(_KEPT.sub("", rule.strip().rstrip(".")))  # carried once more, marked once
    return out


KEPT = " (kept from the previous note)"
_KEPT = re.compile(r"(?: \(kept from the previous note\))+$")


def generate(ledger: Ledger, *, ledger_path: str, ending: str, session: str, previous: str | None = None) -> str:
    """The note for the next session and the next human. `previous`: the note this one
    replaces; every rule of it that still applies is carried forward word for word, so
    the engine's own note never fails the engine's review."""
    lines: list[str] = []
    counts = ", ".join(f"{n} {state}" for state, n in ledger.counts().items())
    lines.append(f"Session {session} ended: {ending}.")
    lines.append(f"Ledger: {counts}.")
    if ledger.paused is not None:
        lines.append(f"The ledger is PAUSED by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}. "
                     f"Nothing runs until `handoff unpause`.")

    flight = []
    for name, t in ledger.targets.items():
        if t.in_flight is not None:
            where = f" on {t.in_flight.host}" if t.in_flight.host else ""
            pid = f" pid {t.in_flight.pid}" if t.in_flight.pid else ""
            flight.append(f"{name} {t.in_flight.step} ({where.strip() or 'host unknown'}{pid}{_since(t.in_flight.started_at)})")
    lines.extend(_section("In flight:", _more(flight)) if flight else ["Nothing in flight."])

    waits = []
    # A target changed outside the engine waits on a reconcile, whatever its (hand-written) state
    # says: no approval of it is taken, no step runs, and nothing its state implies is claimed.
    flagged = {name: ledger.targets[name] for name in flagged_names(ledger)}
    waits += [untrusted_text(name, t, ledger_path) for name, t in flagged.items()]
    for name, t in ledger.targets.items():
        if name in flagged:
            continue
        if t.state == "awaiting_approval":
            waits.append(f"{name} waiting on human approval for {t.awaiting} (asked by {t.awaiting_by or '?'}"
                         f"{_since(t.awaiting_since)}): `handoff approve {ledger_path} {name}`"
                         + (f"; but first resolve: {t.reason}" if t.reason else ""))
    for name, t in ledger.targets.items():
        if name in flagged:
            continue
        if t.state in ("blocked", "failed"):
            waits.append(f"{name} {t.state}{_since(t.changed_at)}: {t.reason or 'no reason recorded'}")
        elif t.reason and t.state not in WAITING:
            waits.append(f"{name} ({t.state}) has an open discrepancy: {t.reason}")
    if waits:
        lines.extend(_section("Waiting on people:", _more(waits)))

    dont = []
    mid_change = set(touched(ledger))
    for name, t in ledger.targets.items():
        if name not in mid_change or name in flagged:
            continue
        done = irreversible_done(ledger, name)
        if t.state in ("blocked", "failed") and done:
            dont.append(f"Do NOT retry {done[-1]} on {name}: irreversible, and it may have half-happened; "
                        f"check the real system, then `handoff reconcile`")
        elif done:
            at = f" (checkpoint {t.checkpoint})" if t.checkpoint else ""
            dont.append(f"Do NOT retry {' or '.join(done)} on {name}: irreversible, already done{at}")
        elif t.state in ("blocked", "failed"):
            dont.append(f"Do NOT restart {name} from scratch: it is mid-change (touched{_since(t.touched_at)})")
    kept = [rule for rule in still_applying(previous, ledger) if not any(rule in d for d in dont)]
    if dont or kept:  # the carried rules are never cut by _more: a dropped rule is a rule lost
        lines.extend(_section("Do not touch:", _more(dont) + [rule + KEPT for rule in kept]))

    held = hold(ledger)
    unread = not_enforced(ledger)  # nothing starts past an invariant the engine does not read (engine.ledger.guard)
    if unread is not None:
        lines.extend(_section("Held by an invariant:", [unread_text(unread)]))
    elif held is not None:
        lines.extend(_section("Held by an invariant:", [held.text()]))
    nxt = []
    for name, t in ledger.targets.items():
        if t.state in WAITING or t.in_flight is not None or name in flagged:
            continue
        step = next_step(ledger, name)
        if step is None:
            continue
        gate = "needs approval" if not step.reversible else "reversible"
        if any(a.step == step.name and not a.used_at for a in t.approvals):
            gate = "approved, runs next session"
        if unread is not None:
            nxt.append(f"{name} {t.state}, held: {step.name} ({gate}) starts once the invariant is one the engine reads")
            continue
        if held is not None and name in held.waiting:  # "ready" would be false: the invariant holds it
            nxt.append(f"{name} {t.state}, held by the invariant: {step.name} ({gate}) starts once a target holding it is done")
            continue
        nxt.append(f"{name} {t.state}, ready for {step.name} ({gate})")
    if nxt:
        lines.extend(_section("Next:", _more(nxt, 3)))
    elif not flagged and all(t.state == "done" for t in ledger.targets.values()):  # a "done" by hand is no end
        lines.append("Every target is done.")
    return "\n".join(lines) + "\n"
