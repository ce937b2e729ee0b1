"""Whoever acts on a ledger through the single-step decision core.

There is one guard and one step runner, whatever drives the ledger: the session loop
(`handoff resume`), one guarded step (`handoff run`, which Claude Code uses as its
hands) and a Temporal activity. Each is an Actor holding the ledger's lease under
`sid`, and each step goes the same way:

1. `attempt` (engine.session.attempt): render the command, ask the guard, then gate an
   irreversible step behind a human approval and page, or write the intent ahead
   (engine.session.steps.write_intent), or refuse with the guard's reason;
2. `_start` hands the intent to the runner (a worker thread in a session, inline in
   `handoff run`): every spawn is fenced under the ledger's lock, the outcome, the
   evidence and the checkpoint are recorded only if the intent is still this holder's
   (engine.session.steps.run_intent), and `after_step` says what happened and pages.

The Actor carries what those steps share: the store and journal, how it speaks (Out),
its heartbeat (a holder that cannot beat stops acting), its invariant readings.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TextIO

from engine.approvals.identity import hostname, os_user
from engine.audit.review import amend, review
from engine.lease.rules import HeartbeatThread
from engine.ledger import ops
from engine.ledger.invariants import InvariantStatus
from engine.ledger.model import Ledger
from engine.planners.autopilot import Action, Autopilot
from engine.planners.base import Planner
from engine.session import gates
from engine.session.attempt import Attempt, _Views, attempt
from engine.session.handoff_note import generate
from engine.session.out import Out
from engine.store.transact import apply


class Actor:
    """The holder-side context of the decision core (see the module docstring)."""

    note_at_start: str | None = None  # the handoff note when this holder began (the note review compares)
    started_iso: str = ""  # when it began: the review looks at what happened since

    def __init__(self, handle, holder_id: str, *, ledger_arg: str, dry_run: bool = False, json: bool = False,
                 stream: TextIO | None = None, identity: str | None = None) -> None:
        self.handle = handle
        self.store = handle.store
        self.ledger_dir = handle.ledger_dir
        self.ledger_arg = ledger_arg  # as the user named it: shown in `handoff approve ...` hints
        self.sid = holder_id
        self.identity = identity or f"agent:{holder_id}"  # never a person's name: approving it is never self-approval
        self.started_as: str | None = os_user()  # the OS user who started this holder (a gate writes it down)
        self.host = hostname()
        self.dry_run = dry_run
        self.ending: str | None = None
        self.code = 0
        self.out = Out(handle.journal, self.identity, json_mode=json, stream=stream, session=holder_id, user=os_user())
        self.txn_lock = threading.Lock()  # this holder's own transactions, one at a time
        self.beat: HeartbeatThread | None = None  # its HeartbeatThread, once it holds the lease
        self.planner: Planner = Autopilot()
        self.workers: dict[str, threading.Thread | None] = {}  # None: running elsewhere (a Temporal activity)
        self.parallel = 1
        self.statuses: list[InvariantStatus] = []
        self.metrics_at = 0.0
        self.last_invariants = ""
        self.invariants_said_at = 0.0
        self.metric_said: dict[str, tuple[tuple[float, bool], float]] = {}
        self.said: set[tuple[str, str, str]] = set()
        self.settling = False  # a proposal waited on an approval's journal record: decide again shortly
        self.views = _Views()

    # -- the decision core --------------------------------------------------------------

    def attempt(self, action: Action, reason: str | None = None, *, ledger=None, may_start: bool = True) -> Attempt:
        """Decide one proposal and act on it: start it, gate it, or refuse it."""
        return attempt(self, action, reason, ledger=ledger, may_start=may_start)

    def attempt_all(self, actions: Iterable[Action], ledger, *, all_reversible: bool = False) -> tuple[int, int]:
        """Attempt a planner's proposals in order, on a ledger re-read after each change.
        `all_reversible`: every proposal's step is reversible, so once no slot is free none
        after it can start or needs a gate (they would each hear "busy"): stop there.
        Returns (started, gated: asked for an approval or settled)."""
        started = gated = 0
        hold = False  # an earlier target waits only for running reversible steps: let them drain
        for action in actions:
            if self.ending:
                break
            if action.step.reversible and not self.dry_run and not self._can_start():
                if all_reversible:
                    break
                continue  # what `attempt` would say first ("busy"), without a call per proposal
            result = self.attempt(action, ledger=ledger, may_start=not hold)
            if result.kind == "held":
                hold = True
            elif result.kind in ("started", "awaiting", "settled", "settling"):
                started += result.kind == "started"
                gated += result.kind != "started"
                ledger = self.store.read()
        return started, gated

    def _can_start(self) -> bool:
        """May a new step start now? (A session adds worker slots and its step budget.)"""
        return len(self.workers) < self.parallel

    def _start(self, intent) -> None:
        raise NotImplementedError  # a session runs it in a worker thread, `handoff run` inline

    def _invariants(self, ledger, *, acting: bool) -> bool:
        return gates.check_invariants(self, ledger, acting=acting)

    def _gate(self, action, argv: list[str], decision) -> bool:
        return gates.gate(self, action, argv, decision)

    def page(self, event: str, message: str) -> bool | None:
        return gates.page(self, event, message)

    def after_step(self, it, outcome, state: str, rev: int, checkpoint, problem) -> None:
        """Say what a finished step did, and page when it went wrong."""
        name, step = it.target, it.step
        if problem:
            self.out.say(f"{name}: DISCREPANCY: {problem}. ledger updated: {name}.state = blocked", target=name, kind="discrepancy", rev=rev)
            self.page("blocked", f"{name}: blocked: {problem}")
        elif outcome.ok:
            what = (f"{step.name} reading {outcome.value:g} ({step.until} holds)" if outcome.value is not None
                    else f"{step.name} passed")
            cp = f", checkpoint = {checkpoint}" if checkpoint else ""
            self.out.say(f"{name}: {what}. ledger updated: {name}.state = {state}{cp}", target=name, kind="transition",
                         rev=rev, step=step.name, to=state, checkpoint=checkpoint)
        elif outcome.stopped:
            self.out.say(f"{name}: {step.name} stopped as the session ends; {name} stays {state}", target=name, kind="transition", rev=rev)
        else:
            self.out.say(f"{name}: {step.name} failed: {outcome.why}. ledger updated: {name}.state = failed", target=name,
                         kind="transition", rev=rev, step=step.name, to="failed")
            self.page("failed", f"{name}: {step.name} failed: {outcome.why}")

    def store_note(self, note: str | None, *, ending: str | None = None,
                   model_problems: list[str] | None = None) -> tuple[str, list[str], int | None]:
        """Review and write a handoff note: the planner's `note`, or (None) one generated from
        the ledger. What the review finds is appended as a `Reviewer:` section and journaled.
        Returns (the note as stored, the problems found, the revision written)."""

        def fn(ledger: Ledger):
            text = note if note is not None else generate(ledger, ledger_path=self.ledger_arg, ending=ending or "", session=self.sid,
                                                          previous=self.note_at_start)
            problems = review(text, ledger, previous=self.note_at_start, since=self.started_iso)
            text = amend(text, problems, model_problems=model_problems)
            return (text, problems), ops.set_note(ledger, ops.Who(self.identity, os_user()), text, base=None)

        ((text, problems), records), rev = apply(self.store, fn, self.txn_lock)
        for r in records:
            self.out.record(r["kind"], r["msg"], rev=rev, text=r.get("text"))
        found = problems + [f"(model review) {p}" for p in model_problems or []]
        by = "the engine's" if note is None else f"the {self.planner.name} planner's"
        self.out.say(f"note review: {by} note " + (f"has {len(found)} problem(s); a Reviewer: section lists them" if found else "passes"),
                     kind="note_review", rev=rev, problems=found or None, author=self.planner.name if note is not None else "engine")
        return text, found, rev
