"""The guard: the one function that decides whether a step may run on a target now.

It sits outside every planner (autopilot, Claude) and the Claude Code hook calls it
too. It checks, in order: the target was not changed outside the engine (a hand edit
no runbook step makes: engine.store.outside), the ledger is not paused, the target is
where the step starts, nothing is in flight on it, preconditions, the touched-target
limit, metric thresholds, and for an irreversible step an unused approval bound to this
exact command and checkpoint. Prompts drift; this does not.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass

from engine.approvals.policy import policy_for, progress, standing
from engine.errors import NoSuchTarget
from engine.ledger import sealed
from engine.ledger.invariants import Invariant, InvariantStatus, max_age_of, not_enforced, parse_all, unread_text
from engine.ledger.model import Approval, Ledger, Step
from engine.ledger.render import approval_hash
from engine.ledger.touched import is_touched, quiet, touched, touched_states


@dataclass
class Decision:
    """What the guard says about one step on one target."""

    allowed: bool
    reason: str
    needs_approval: bool = False
    approval: Approval | None = None
    hash: str | None = None
    used: dict | None = None  # the journal's record of an earlier use of this approval
    settling: bool = False  # an approval whose journal record may still be on its way: decide again shortly


def valid_approval(ledger: Ledger, name: str, step: Step, *, ledger_dir: str) -> tuple[Approval | None, str]:
    """An unused approval of `step` on `name` that matches the command (as rendered in
    `ledger_dir`) and the checkpoint now and, under a `count` policy, completes that many
    by distinct people (the last one)."""
    target = ledger.targets[name]
    digest = approval_hash(name, target, step, ledger_dir=ledger_dir)
    need = policy_for(ledger, step).count
    have = standing(ledger, name, step, digest)
    if len(have) >= need:
        return have[need - 1], digest
    if have:
        return None, f"{progress(len(have), need)} ({', '.join(a.by for a in have)})"
    stale = None
    for approval in target.approvals:
        if approval.step != step.name or approval.used_at:
            continue
        stale = approval
    if stale is not None:
        return None, (
            f"the approval by {stale.by} no longer matches: the command or the checkpoint changed "
            f"since it was given (checkpoint then {stale.checkpoint!r}, now {target.checkpoint!r})"
        )
    return None, ""


def check(
    ledger: Ledger,
    name: str,
    step: Step,
    *,
    statuses: list[InvariantStatus] | None = None,
    ledger_dir: str,
    where: str | None = None,
) -> Decision:
    """May `step` run on target `name` now? (`ledger_dir`: where `{ledger_dir}` points, for the
    approval's hash; `where`: the ledger as people see it, named in the words of a refusal)"""
    if name not in ledger.targets:
        return Decision(False, NoSuchTarget(name, ledger.targets, ledger=where).message)
    target = ledger.targets[name]
    if target.changed_outside:  # engine.store.outside: a hand edit no step makes is acted on by nothing
        return Decision(False, untrusted_text(name, target, where))
    if ledger.paused is not None:
        why = ledger.paused.why or "no reason given"
        return Decision(False, f"ledger paused by {ledger.paused.by or 'someone'}: {why}")
    invariants = parse_all(ledger)
    unread = not_enforced(ledger, invariants)
    if unread is not None:
        return Decision(False, f"{unread_text(unread)} ({unread.problem})")
    if target.in_flight is not None:
        return Decision(False, f"{name} already has {target.in_flight.step} in flight")
    if not step.reversible and (step.until or step.retries > 0):
        return Decision(False, f"runbook step {step.name} is irreversible but has "
                               f"{'`until`' if step.until else f'retries: {step.retries}'}: an irreversible step runs "
                               "exactly once per approval; put the waiting in a following reversible step")
    position = ledger.position(name)
    if position != step.from_:
        return Decision(False, f"{name} is {position}; {step.name} runs only from {step.from_}")
    for inv in invariants:
        if inv.kind == "precondition" and inv.step == step.name and position != inv.state:
            return Decision(False, f"invariant: {inv.text} ({name} is {position})")
        if inv.kind == "max_touched" and inv.limit is not None:
            # Any running step touches its target (DESIGN: "or while any step of it is
            # running"), a reversible check included, unless the runbook says it does not
            # (`touches: false`); one already touched adds nothing.
            states = touched_states(ledger)
            if not quiet(step) and not is_touched(ledger, name, states):
                count = len(touched(ledger))
                if count + 1 > inv.limit:
                    return Decision(False, f"invariant: {inv.text} (touched {count}/{inv.limit}; {name} would make {count + 1})")
    refused = _metric_refusal(ledger, invariants, statuses)
    if refused is not None:
        return refused
    if not step.reversible:
        approval, why = valid_approval(ledger, name, step, ledger_dir=ledger_dir)
        digest = approval_hash(name, target, step, ledger_dir=ledger_dir)
        if approval is None:
            reason = f"{step.name} is irreversible and needs a human approval"
            if why:
                reason += f"; {why}"
            return Decision(False, reason, needs_approval=True, hash=digest)
        return Decision(True, f"approved by {approval.by} ({approval.user}) at {approval.at}", approval=approval, hash=digest)
    return Decision(True, "reversible step; invariants hold")


def _is_flagged(target) -> bool:
    return bool(target.changed_outside)


def flagged(ledger: Ledger) -> list[str]:
    """The targets flagged as changed outside the engine (engine.store.outside): a running
    session asks on every look, so on a store's shared snapshot the answer is kept and carried
    from write to write (engine.ledger.sealed): a step at 10,000 targets never walks them all."""
    found = sealed.names(ledger.targets, "changed_outside", _is_flagged)
    return found if found is not None else [name for name, t in ledger.targets.items() if t.changed_outside]


def untrusted_text(name: str, target, where: str | None, *, seen: str = "") -> str:
    """Why nothing acts on a target flagged as changed outside the engine, and what ends that:
    the one sentence every refusal and stop on such a target says (the guard, `handoff approve`,
    Slack, a session, the handoff note). `where`: the ledger as `handoff status` shows it, said
    shell-quoted so the line can be pasted (None: not known, `LEDGER`); `seen`: what the
    target's probe reads, when one was run."""
    mark = target.changed_outside or {}
    ledger = shlex.quote(where) if where is not None else "LEDGER"
    return (f"{name} was changed outside the engine at {mark.get('at', '?')} ({', '.join(mark.get('fields') or []) or 'fields'}; "
            f"now {target.state}){seen}: nothing acts on it until a person checks the real system and runs "
            f"`handoff reconcile {ledger} {shlex.quote(name)} --to STATE --reason WHY`")


def _metric_refusal(ledger: Ledger, invariants: list[Invariant], statuses: list[InvariantStatus] | None) -> Decision | None:
    """Each pause threshold of `ledger` judged on `statuses`: refused when one is violated,
    when `statuses` were read for other invariants (edited since: no reading judged this one),
    or when the reading that said ok is now older than its metric's max_age. (`statuses`
    None: the caller judges no metric.) A refusal of the last two kinds settles: read again."""
    if statuses is None:
        return None
    judged = {st.invariant: st for st in statuses if st.kind == "metric" and st.invariant is not None}
    for inv in invariants:
        if inv.kind != "metric":
            continue
        status = judged.get(inv)
        if status is None:
            return Decision(False, f"invariant: {inv.text} (changed since the metrics were read; reading them again)",
                            settling=True)
        if status.status == "violated":
            return Decision(False, f"invariant: {status.text} ({status.value})")
        if status.status == "ok" and status.read_at is not None and time.time() - status.read_at > max_age_of(ledger, inv.metric):
            return Decision(False, f"invariant: {inv.text} (its reading is now older than max_age; reading it again)",
                            settling=True)
    return None
