"""What the session checks and asks before it acts: invariants (metrics read here),
pausing on a bad threshold, approval gates, and pages to a human.

Functions of the running `Session` (engine.session.loop); split out to keep the loop
readable. A failing pager never ends a session: it is journaled and work goes on.
"""

from __future__ import annotations

import sys
import time

from engine.approvals.identity import os_user
from engine.codec.timefmt import now_iso
from engine.ledger import ops
from engine.ledger.invariants import evaluate, parse_all
from engine.ledger.model import Ledger
from engine.ledger.render import describe
from engine.session.context import SessionContext
from engine.session.probes import read_metric
from engine.session.runner import run_step
from engine.store.transact import NoChange, apply

RESAY_AFTER = 60.0  # seconds before an unchanged reading or invariant line is journaled again


def check_invariants(s: SessionContext, ledger: Ledger, *, acting: bool) -> bool:
    """Read metrics, evaluate every invariant; pause and end on a bad threshold."""
    readings: dict[str, tuple[float, bool, float]] = {}
    unreadable: dict[str, str] = {}
    for metric in sorted({inv.metric for inv in parse_all(ledger) if inv.kind == "metric" and inv.metric}):
        try:
            value, percent = read_metric(ledger, metric, s.ledger_dir)
        except ValueError as err:
            unreadable[metric] = str(err)
            s.out.record("metric", f"{metric} unreadable: {err}", metric=metric, error=str(err))
            continue
        readings[metric] = (value, percent, time.time())
        # Journal a reading when it changes, or once a minute: a session waiting on
        # approvals reads every second, and the journal is for people to read.
        last = s.metric_said.get(metric)
        if last is None or last[0] != (value, percent) or time.monotonic() - last[1] >= RESAY_AFTER:
            s.metric_said[metric] = ((value, percent), time.monotonic())
            s.out.record("metric", f"{metric} = {value:g}{'%' if percent else ''}", metric=metric, value=value, percent=percent)
    s.metrics_at = time.monotonic()
    s.statuses = evaluate(ledger, lambda name: readings.get(name))
    parts = []
    for st in s.statuses:
        if st.kind == "max_touched":
            parts.append(f"{st.value} {st.status}")
        elif st.kind == "metric" and st.invariant is not None and st.invariant.metric is not None:  # as a metric status always has
            name = st.invariant.metric
            got = readings.get(name)
            shown = f"{name} {got[0]:g}{'%' if got[1] else ''}" if got else f"{name} unreadable"
            parts.append(f"{shown} {st.status}")
        elif st.status == "unenforced":
            parts.append(f'"{st.text}" not understood')
    text = "invariant check: " + (", ".join(parts) or "no invariants to check")
    if text != s.last_invariants or (acting and time.monotonic() - s.invariants_said_at >= RESAY_AFTER):
        s.out.say(text, kind="invariants", statuses=[{"text": s.text, "status": s.status, "value": s.value} for s in s.statuses])
        s.last_invariants = text
        s.invariants_said_at = time.monotonic()
    bad = [s for s in s.statuses if s.kind == "metric" and s.status != "ok"]
    if not bad:
        return True
    st = bad[0]
    metric = (st.invariant.metric if st.invariant is not None else None) or ""
    why = (f"invariant violated: {st.text} ({st.value})" if st.status == "violated"
           else f"invariant cannot be checked: {st.text} ({unreadable.get(metric, st.value)})")
    pause(s, why)
    return False

def pause(s: SessionContext, why: str) -> None:
    who = ops.Who(s.identity, os_user())
    records, rev = apply(s.store, lambda ledger: ops.pause(ledger, who, why), s.txn_lock)
    for r in records or []:
        s.out.record(r["kind"], r["msg"], rev=rev, reason=r.get("reason"))
    paged = s.page("paused", f"ledger paused by session {s.sid}: {why}")
    s.out.say(f"{why}. Ledger paused; {_paged(s, paged)}.", kind="paused", rev=rev)
    s.ending, s.code = f"paused: {why}", 4

def gate(s: SessionContext, action, argv: list[str], decision) -> bool:
    name, step = action.target, action.step

    def fn(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None or t.in_flight is not None or t.state == "awaiting_approval" or ledger.position(name) != step.from_:
            raise NoChange(False)
        if ledger.session is None or ledger.session.id != s.sid:
            raise NoChange(False)
        if t.changed_outside:
            return False  # never asked for: the hand edit this write just flagged is written (and journaled) instead
        t.state, t.awaiting, t.awaiting_by = "awaiting_approval", step.name, s.identity
        # Who started the asking session goes with the request: never one of a count's people, even
        # when its start record never reached the journal (engine.approvals.policy.requesters).
        t.awaiting_started_by, t.awaiting_started_as = s.handle.actor, s.started_as
        t.awaiting_since = t.changed_at = now_iso()
        t.next_action = f"a human approves {step.name}: handoff approve {s.ledger_arg} {name}"
        return True

    ok, rev = apply(s.store, fn, s.txn_lock)
    if not ok:
        return False
    paged = s.page("approval_needed", f"{name}: {step.name} requires approval (irreversible): {describe(argv)}. "
                                      f"{decision.reason}. Approve with: handoff approve {s.ledger_arg} {name}")
    s.out.say(f"{name}: {step.name} requires approval (irreversible). {_capital(_paged(s, paged))}.", target=name,
              kind="gate", step=step.name, argv=argv, hash=decision.hash, reason=decision.reason,
              started_by=s.handle.actor, started_as=s.started_as)
    s.out.say(f"ledger updated: {name}.state = awaiting_approval", target=name, kind="transition", rev=rev,
                 to="awaiting_approval", step=step.name)
    return True

def owner(s: SessionContext) -> str:
    ledger = s.store.read()
    return ledger.owner_shift or "the owner"

def _paged(s: SessionContext, paged: bool | None) -> str:
    """`paging platform-oncall` (the article's words) only when a page went out."""
    if paged is None:
        return f"would page {owner(s)} (dry run)"
    return f"paging {owner(s)}" if paged else "nobody was paged"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def page(s: SessionContext, event: str, message: str) -> bool | None:
    """Page a human; True if at least one page went out (None in a dry run, which pages
    nobody). Every delivery is journaled: `page` sent, `page_failed` not sent after its
    retries, `page_none` nobody to page. A failing pager is never fatal."""
    ledger = s.store.read()
    text = s.out.clean(f"[{ledger.task}] {message}")  # a page leaves the machine: no secrets in it
    if s.dry_run:
        s.out.record("page", f"dry run: would page ({event}): {text}", event=event, dry_run=True)
        return None
    from engine.notify import listeners, send_pages

    if not listeners(ledger.notify, event):
        why = "the ledger has no notify: entry" if not ledger.notify else f"no notify: entry listens for {event}"
        s.out.say(f"nobody was paged about {event}: {why}", kind="page_none", event=event)
        return False
    sent = False
    for result in send_pages(ledger.notify, text, event=event, ledger_dir=s.ledger_dir, python=sys.executable, run_command=run_step):
        tries = f" after {result.attempts} tries" if result.attempts > 1 else ""
        if result.ok:
            sent = True
            s.out.record("page", f"paged {result.target} ({event}){tries}", event=event, to=result.target, ok=True,
                         attempts=result.attempts)
        else:
            s.out.say(f"page to {result.target} about {event} failed{tries}: {result.error}", kind="page_failed", event=event,
                      to=result.target, ok=False, error=result.error, attempts=result.attempts)
    return sent


def without_reversible_runs(ledger: Ledger) -> Ledger:
    """A shallow view of `ledger` as it will be when its running reversible steps end
    (for deciding what to ask for and what to wait for; never written)."""
    targets = dict(ledger.targets)
    for name, t in ledger.targets.items():
        if t.in_flight is not None:
            step = ledger.step(t.in_flight.step)
            if step is not None and step.reversible:
                targets[name] = t.model_copy(update={"in_flight": None})
    view = ledger.model_copy()
    view.targets = targets
    return view
