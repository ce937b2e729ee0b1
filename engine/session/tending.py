"""Tending approval requests while a session waits: reminders, one escalation, expiry.

The rules (how long, whom) are the approval policy's (engine.approvals.policy); `tend`
runs in the session loop with an injectable clock. What it already did is found in the
journal, so a new session never pages twice for one step.
"""

from __future__ import annotations

import sys
import time

from engine.approvals.policy import expired, policy_for, span
from engine.codec.timefmt import now_iso, parse_iso
from engine.ledger.model import Ledger, Step
from engine.notify import listeners, send_pages
from engine.session.context import SessionContext
from engine.session.runner import run_step
from engine.store.transact import NoChange, apply


def tend(s: SessionContext, ledger: Ledger, *, now: float | None = None) -> None:
    """Remind, escalate or expire each awaiting target as its policy says (see the module)."""
    now = time.time() if now is None else now
    for name, target in ledger.targets.items():
        step = ledger.step(target.awaiting) if target.state == "awaiting_approval" and target.awaiting else None
        since = parse_iso(target.awaiting_since)
        if step is None or since is None or target.awaiting_since is None:
            continue
        pol, age = policy_for(ledger, step), now - since
        if not (pol.expire_after or pol.escalate_after or pol.remind_after):
            continue
        after = expired(ledger, target, step, now)
        if after:
            _expire(s, name, step, target.awaiting_since, after)
            continue
        done = _done(s, name, target.awaiting_since)
        if pol.escalate_after and age >= pol.escalate_after and "escalated" not in done:
            _escalate(s, ledger, name, step, pol.escalate_after, target.awaiting_since)
        if pol.remind_after and age >= pol.remind_after:
            due = int(age // pol.remind_after)
            if due > done.get("reminded", 0):
                msg = f"{name}: {step.name} still awaits approval ({span(age - age % pol.remind_after)}): handoff approve {s.ledger_arg} {name}"
                s.page("approval_needed", msg)
                s.out.say(f"reminder {due} sent: {msg}", target=name, kind="approval_reminder", n=due, since=target.awaiting_since)


def _done(s: SessionContext, name: str, since: str) -> dict:
    """What was already sent for this request (the journal's records naming its start)."""
    out: dict = {}
    reminded = s.handle.journal.last_of("approval_reminder", target=name, since=since)
    if reminded:
        out["reminded"] = reminded.get("n", 0)
    if s.handle.journal.last_of("approval_escalated", target=name, since=since):
        out["escalated"] = True
    return out


def _escalate(s: SessionContext, ledger: Ledger, name: str, step: Step, after: float, since: str) -> None:
    asked = [i for i, n in enumerate(ledger.notify) if n in listeners(ledger.notify, "approval_needed")]
    nxt = ledger.notify[(asked[-1] + 1) if asked else 0:][:1]
    msg = f"{name}: {step.name} has awaited approval for {span(after)}; escalated: handoff approve {s.ledger_arg} {name}"
    sent = []
    for result in send_pages(nxt, s.out.clean(f"[{ledger.task}] {msg}"), event="approval_escalated", ledger_dir=s.ledger_dir,
                             python=sys.executable, run_command=run_step):
        sent.append(result.target if result.ok else f"{result.target} (failed: {result.error})")
    s.out.say(f"escalated: {msg}; paged {', '.join(sent) or 'nobody (no next notify entry)'}", target=name,
              kind="approval_escalated", since=since, to=sent or None)


def _expire(s: SessionContext, name: str, step: Step, since: str, after: float) -> None:
    why = f"approval request expired after {span(after)}"

    def fn(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None or t.state != "awaiting_approval" or t.awaiting_since != since:
            raise NoChange(False)  # approved, rejected or asked again meanwhile: that stands
        t.state, t.reason = "blocked", why
        t.clear_request()
        t.next_action = f"a person decides: approve it again from {step.from_} (`handoff unblock`), or leave it"
        t.changed_at = now_iso()
        return True

    ok, rev = apply(s.store, fn, s.txn_lock)
    if ok:
        s.out.say(f"{name}: {step.name}: {why}; ledger updated: {name}.state = blocked", target=name, kind="approval_expired",
                  rev=rev, step=step.name)
        s.page("blocked", f"{name}: blocked: {why} ({step.name} was never approved)")
