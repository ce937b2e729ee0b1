"""One proposal, decided: the single way any planner's action becomes work (or does not).

`attempt(session, action, reason)` renders the step's command, asks the guard, and then
starts it write-ahead (engine.session.steps), gates an irreversible step behind a human
approval (engine.session.gates), or refuses it with the guard's reason. Autopilot's loop
calls it for each action it proposes; the Claude planner calls it for each `run_step`
tool call and sends the Attempt's text back as the tool result. There is one guard and
one step runner, whoever proposes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.errors import Refused
from engine.host import failpoints
from engine.ledger import guard, ops
from engine.ledger.model import Ledger
from engine.ledger.render import describe
from engine.planners.autopilot import Action
from engine.session.context import SessionContext
from engine.session.gates import owner, without_reversible_runs
from engine.session.reconcile import settle_used_approval
from engine.session.steps import Intent, write_intent

Kind = Literal["started", "awaiting", "settled", "settling", "refused", "held", "busy"]


@dataclass(frozen=True)
class Attempt:
    """What became of one proposal. `held`: allowed once running reversible steps end;
    `busy`: allowed, but no worker slot or step budget is free now; `settled`: an
    approval the journal shows was already used was settled by the step's probe;
    `settling`: an approval just given whose journal record is not there yet (the
    approving process writes it right after the ledger): nothing ran, decide again shortly."""

    kind: Kind
    text: str

    def tool_result(self) -> str:
        """The words a planning model gets back."""
        if self.kind == "started":
            return f"started: {self.text}"
        if self.kind == "awaiting":
            return f"awaiting approval: {self.text}"
        if self.kind == "settling":
            return f"not yet: {self.text} (the session looks again in a moment; propose it again then)"
        return f"refused: {self.text}"


class _Views:
    """`without_reversible_runs(ledger)`, computed once per ledger read (it copies every target)."""

    def __init__(self) -> None:
        self.source: Ledger | None = None
        self.view: Ledger | None = None

    def of(self, ledger: Ledger) -> Ledger:
        if ledger is not self.source or self.view is None:
            self.source, self.view = ledger, without_reversible_runs(ledger)
        return self.view


def attempt(s: SessionContext, action: Action, reason: str | None = None, *, ledger: Ledger | None = None, may_start: bool = True) -> Attempt:
    """Decide `action` now and act on the decision; see the module docstring."""
    name, step = action.target, action.step
    ledger = ledger if ledger is not None else s.store.read()
    if reason is not None:
        s.out.say(f"{name}: planner proposes {step.name}: {reason}", target=name, kind="proposal", step=step.name,
                  reason=reason, planner=s.planner.name)
    result = _decide(s, action, ledger, may_start)
    if reason is not None and result.kind not in ("started", "awaiting", "settling"):  # settling: said once, in _decide
        s.out.say(f"{name}: {step.name} not started: {result.text}", target=name, kind="refusal", step=step.name)
    return result


def _decide(s: SessionContext, action: Action, ledger: Ledger, may_start: bool) -> Attempt:
    name, step = action.target, action.step
    if s.ending:
        return Attempt("refused", f"the session is handing off ({s.ending}); nothing new starts")
    if step.reversible and not s.dry_run and not s._can_start():
        return Attempt("busy", _busy_text(s))  # a reversible step never needs a gate: no rendering needed
    try:
        argv = ops.rendered_command(ledger, name, step, s.ledger_dir)
    except Refused as err:
        s.out.say(f"{name}: cannot render {step.name}: {err}", target=name, kind="warning")
        return Attempt("refused", f"cannot render {step.name}: {err}")
    decision = guard.check(ledger, name, step, statuses=s.statuses, ledger_dir=s.ledger_dir, where=s.handle.display_location)
    if decision.settling:  # the readings judged other invariants, or aged: read again, then decide
        s.settling = True
        return Attempt("settling", decision.reason)
    busy_itself = name in ledger.targets and ledger.targets[name].in_flight is not None
    if not decision.allowed and not decision.needs_approval and s.workers and not busy_itself:
        # Refused now; would it pass once the running reversible steps end?
        later = guard.check(s.views.of(ledger), name, step, statuses=s.statuses, ledger_dir=s.ledger_dir,
                            where=s.handle.display_location)
        if later.allowed:
            return Attempt("held", f"{decision.reason}; it can run once the running reversible steps finish")
        if later.needs_approval:
            decision = later
    if s.dry_run and (name, step.name, decision.reason) not in s.said:
        s.said.add((name, step.name, decision.reason))  # each decision once, not every poll
        s.out.say(f"{name}: dry run: {step.name} would run {describe(argv)} -> guard: "
                  f"{'allowed' if decision.allowed else 'refused'} ({decision.reason})", target=name, kind="decision")
    if decision.allowed and s.dry_run and not step.reversible:
        # A rehearsal never spends an approval: its shadow's journal starts empty, so it holds no record
        # (no witness) of the approvals copied with the ledger (engine.store.highwater); it says so.
        return Attempt("refused", f"dry run: {step.name} is irreversible; a rehearsal never starts one or spends its "
                                  "approval (the real run decides it again)")
    if decision.allowed:
        if not may_start or not s._can_start():
            return Attempt("busy", _busy_text(s))
        failpoints.reached("before-intent")  # tests: a stop or a change lands between the decision and its intent
        intent = write_intent(s, action, s.statuses)
        if not isinstance(intent, Intent):
            if intent.used is not None:  # the journal (or a spent mark) says it already ran: prove it, never re-run
                settle_used_approval(s, name, step, intent.approval, intent.used)
                shows = intent.used.get("witness") or "the journal"
                return Attempt("settled", f"{name} {step.name} had already run under this approval ({shows} says so); "
                                          "it is never run twice: its verify decided what the ledger says now")
            if intent.settling:
                s.settling = True
                if (name, step.name, "settling") not in s.said:  # said once, though the session looks again and again
                    s.said.add((name, step.name, "settling"))
                    s.out.say(f"{name}: {step.name} not started yet: {intent.reason}", target=name, kind="decision")
                return Attempt("settling", intent.reason)
            return Attempt("refused", intent.reason)
        failpoints.reached("after-intent")
        s._start(intent)
        return Attempt("started", f"{name} {step.name} ({'reversible' if step.reversible else decision.reason})")
    if decision.needs_approval:
        if not s.planner.should_ask(s.views.of(ledger), action):
            return Attempt("refused", f"{decision.reason}; not asking now: the touched-target limit has no room "
                                      "for another approval while others wait")
        if s._gate(action, argv, decision):
            return Attempt("awaiting", f"{name} {step.name} is irreversible; paged {owner(s)} for an approval")
        return Attempt("refused", f"{name} changed while asking for an approval of {step.name}; look again")
    return Attempt("refused", decision.reason)


def _busy_text(s: SessionContext) -> str:
    if len(s.workers) >= s.parallel:
        return f"no free step slot: {len(s.workers)} step(s) running (at most {s.parallel} at once); try when one finishes"
    return "the step budget is spent up to the hand-off point; nothing new starts"
