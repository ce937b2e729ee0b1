"""What people do to a ledger: approve, reject, note, pause, retry, block, stop.

Each operation is a function of (ledger, who, ...) that changes the ledger it is given
and returns the journal records it produced, or raises `Refused` with the reason. The
store runs it inside a transaction (so it may run twice if the file changed
underneath); `engine.api` journals the records after the write lands.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, overload

from engine.approvals.approvers import Signed, SlackId, admit_signed, table, verified_entry
from engine.approvals.persons import one_person
from engine.approvals.policy import ASKED_AS, STARTED_AS, asked_for_it, expired, policy_for, progress, span, standing
from engine.approvals.witness import withdrawn_fields
from engine.audit.redact import redact
from engine.codec.timefmt import now_iso
from engine.errors import ApprovalChanged, Conflict, NoSuchState, NoSuchStep, NoSuchTarget, Refused
from engine.ledger.drift import DRIFT_UNCHECKED, checkpoint_drift, drift_refusal
from engine.ledger.guard import untrusted_text
from engine.ledger.model import Approval, Ledger, Pause, PreviousNote, Step, Target
from engine.ledger.render import SHORT, approval_digest, describe, render, step_fields
from engine.ledger.touched import is_touched
from engine.ledger.workdir import WorkingDir

Records = list[dict[str, Any]]


@dataclass(frozen=True)
class Who:
    """The person (or session) acting: the `--as` name and the OS login user, always both."""

    name: str
    user: str

    def __str__(self) -> str:
        return self.name if self.name == self.user else f"{self.name} ({self.user})"


def _target(ledger: Ledger, name: str) -> Target:
    target = ledger.targets.get(name)
    if target is None:
        raise NoSuchTarget(name, ledger.targets)  # engine.api names the ledger (NoSuchTarget.at)
    return target


@overload
def _clean(ledger: Ledger, text: str) -> str: ...
@overload
def _clean(ledger: Ledger, text: str | None) -> str | None: ...
def _clean(ledger: Ledger, text: str | None) -> str | None:
    """What a person typed, with secrets masked before it is stored (the ledger's patterns too)."""
    return text if not text else redact(text, ledger.redact)


def _record(kind: str, msg: str, target: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "msg": msg, "target": target, **fields}


def same_person(a: str | None, b: str | None) -> bool:
    """Names compare trimmed and case-folded: `agent:s1 ` and `Agent:S1` are one actor."""
    return a is not None and b is not None and a.strip().casefold() == b.strip().casefold()


@dataclass
class PendingCommand:
    """What an approval of a target would approve: the exact argv, bound to the checkpoint."""

    step: Step
    argv: list[str]
    irreversible: bool
    checkpoint: str | None
    hash: str
    folder: str = ""  # where it runs (its working folder), bound by the hash too
    digest: str = ""  # the whole sha256 `hash` begins (engine.ledger.render.approval_digest)


def pending_command(ledger: Ledger, name: str, ledger_dir: str, step: str | None = None) -> PendingCommand:
    """The command an approval of `name` (of its awaiting step, or `step`) would bind."""
    the_step = approval_step(ledger, name, step)
    argv = rendered_command(ledger, name, the_step, ledger_dir)
    target = ledger.targets[name]
    digest = approval_digest(name, target, the_step, ledger_dir=ledger_dir)
    folder = "" if isinstance(ledger_dir, WorkingDir) else str(ledger_dir)  # a database ledger has none of its own
    return PendingCommand(the_step, argv, not the_step.reversible, target.checkpoint, digest[:SHORT], folder, digest)


def rendered_command(ledger: Ledger, name: str, step: Step, ledger_dir: str, python: str | None = None) -> list[str]:
    """The exact argv `step` would run for target `name`."""
    if not step.run:
        raise Refused(f"runbook step {step.name} has no `run` command", title="Runbook incomplete")
    values = step_fields(name, ledger.targets[name], step, ledger_dir=ledger_dir, python=python or sys.executable)
    return render(step.run, values, what=f"step {step.name}")


def approval_step(ledger: Ledger, name: str, step_name: str | None) -> Step:
    """The step an approval of `name` is for: the awaiting one, or `step_name` ahead of time."""
    target = _target(ledger, name)
    if not ledger.steps():
        raise Refused("this ledger has no runbook; an approval needs the runbook step it approves", title="No runbook")
    wanted = step_name or target.awaiting
    if wanted is None:
        nxt = [s for s in ledger.steps() if s.from_ == ledger.position(name) and not s.reversible]
        if len(nxt) == 1:
            wanted = nxt[0].name
        else:
            raise Refused(
                f"{name} is {target.state} and waits on no approval; name the step with --step",
                title="Nothing to approve",
            )
    step = ledger.step(wanted)
    if step is None and step_name is not None:  # typed by a person (`--step`): usage, said as a missing target is
        raise NoSuchStep(step_name, [s.name for s in ledger.steps()])
    if step is None:
        names = ", ".join(s.name for s in ledger.steps())
        raise Refused(f"the runbook has no step {wanted!r} (steps: {names})", title="No such step")
    if target.awaiting and target.state == "awaiting_approval" and step.name != target.awaiting:
        raise Refused(f"{name} awaits approval of {target.awaiting}, not {step.name}", title="Different step")
    if ledger.position(name) != step.from_:
        raise Refused(f"{name} is {ledger.position(name)}; {step.name} runs only from {step.from_}", title="Wrong state")
    if step.reversible:
        raise Refused(f"{step.name} is reversible and needs no approval", title="No approval needed")
    return step


def approve(ledger: Ledger, name: str, who: Who, *, step: str | None, comment: str | None, ledger_dir: str,
            expect_hash: str | None = None, signed: Signed | None = None,
            requested_by: set[str] | None = None, slack: SlackId | None = None,
            expect_drift: Any = DRIFT_UNCHECKED, where: str | None = None) -> tuple[Approval, Records]:
    """Record an approval bound to the exact command and checkpoint, and release the gate.

    `expect_hash`: the hash of the command the approver was shown; if what would be
    approved now differs, nothing is recorded (ApprovalChanged shows what is there now).
    `expect_drift`: the checkpoint drift the approver was shown (None: none; else its text,
    engine.ledger.drift.checkpoint_drift); if the target's drift now is another (one recorded,
    changed or reconciled since), nothing is recorded (ApprovalChanged, naming the target).
    Left out (DRIFT_UNCHECKED), the approval is not bound to a drift.
    `signed`: the approver's signature over the approval (engine.approvals.approvers).
    `requested_by`: who asked (engine.approvals.policy.requesters): under a `count`
    policy none of them may approve; until `count` people did, the target keeps awaiting.
    `slack`: given from Slack by this identity (engine.slack): recorded as `via: slack`.
    A target flagged as changed outside the engine is refused: what a hand edit claims is
    approved only after a person reconciles it (an approval given before would outlive that);
    the refusal names the ledger as `where` (the location as people see it) says."""
    target = _target(ledger, name)
    if target.changed_outside:  # flagged (engine.store.outside) by this very write too, before `fn` runs
        raise Refused(f"{untrusted_text(name, target, where)}; nothing was approved", title="Changed outside the engine")
    try:
        pending = pending_command(ledger, name, ledger_dir, step)
    except Refused as err:
        if expect_hash is not None:
            raise ApprovalChanged(f"{name} no longer waits on what you were shown: {err.message}; nothing was approved",
                                  seen=expect_hash, now=None) from None
        raise
    the_step = pending.step
    after = expired(ledger, target, the_step, time.time())
    if after:  # whichever runtime waits, and however long before it next looks (a Temporal workflow: up to its idle timer)
        raise Refused(f"{name}: the request to approve {the_step.name} expired after {span(after)} (asked at "
                      f"{target.awaiting_since}); an expired request is never approved. Nothing was approved: the session "
                      f"or runtime waiting on it blocks {name} when it next looks; to run {the_step.name} after that, "
                      f"`handoff unblock LEDGER {name} --to {the_step.from_} --reason WHY` and it is asked again",
                      title="Request expired")
    comment = _clean(ledger, comment)
    if expect_hash is not None and pending.hash != expect_hash:
        raise ApprovalChanged(
            f"{name}: what {the_step.name} would run changed since you looked (you saw hash {expect_hash}); "
            f"now it would run {describe(pending.argv)} with checkpoint {pending.checkpoint or '-'} "
            f"(hash {pending.hash}). Nothing was approved: look again, then approve what is there now",
            seen=expect_hash, now=pending,
        )
    if expect_drift is not DRIFT_UNCHECKED and checkpoint_drift(target) != expect_drift:
        # The drift is in no hash: a drift the approver was not shown is never approved unseen.
        raise ApprovalChanged(drift_refusal(name, expect_drift, checkpoint_drift(target)),
                              seen=expect_hash or "", now=None)
    by, verified, at = admit_signed(ledger, name, who.name, who.user, pending.step.name, pending.hash, pending.checkpoint,
                                    signed, slack)
    requester_rule(ledger, name, the_step, who, by, requested_by, verified=verified)
    need = policy_for(ledger, the_step).count
    records: Records = []
    approval = Approval(
        by=by,
        user=who.user,
        at=at,
        step=the_step.name,
        hash=pending.hash,
        checkpoint=target.checkpoint,
        comment=comment or None,
        verified=verified if table(ledger) is not None else None,
        signed=signed.payload if signed else None,
        sig=signed.sig if signed else None,
        via="slack" if slack else None,
        slack=slack.record() if slack else None,
    )
    for existing in list(target.approvals):
        if existing.step != the_step.name or existing.used_at:
            continue
        # Under a `count`, people are told apart by what proves them (engine.approvals.persons), not by name.
        shown = one_person(table(ledger), existing, approval) if existing.hash == pending.hash and need > 1 else None
        if existing.hash == pending.hash and need > 1 and shown is None:
            continue  # a co-approval: `need` distinct people approve the same command
        if shown is not None and not same_person(existing.by, by):
            raise Refused(
                f"{name}: {the_step.name} was already approved by that person: {existing.by} at {existing.at}, and "
                f"{by} is proved by the same {shown}. It needs {need} different people: someone else approves it "
                f"(if {by} and {existing.by} are two people, give each their own os_user or ssh_key in `approvers:`); "
                "nothing was approved",
                title="Already approved by that person",
            )
        if existing.hash == pending.hash:
            raise Refused(
                f"{name} already holds an unused approval of {the_step.name} by {existing.by} at {existing.at}; "
                "withdraw it first with `handoff unapprove`",
                title="Already approved",
            )
        # It can never be used (the command or checkpoint changed since): this one replaces it.
        target.approvals.remove(existing)
        records.append(_record("unapproval", f"{name}: stale approval of {existing.step} by {existing.by} "
                                             f"(hash {existing.hash}) replaced", name, **withdrawn_fields(existing)))
    target.approvals.append(approval)
    have = standing(ledger, name, the_step, pending.hash)
    if need > 1:
        # One given ahead of time by whoever asked (or started the asking session) is never one of
        # them: withdrawn, so that nothing after (the fence, a retry) counts or spends it either.
        for early in [a for a in have if asked_for_it(a, requested_by or set())]:
            target.approvals.remove(early)
            have.remove(early)
            records.append(_record("unapproval", f"{name}: approval of {early.step} by {early.by} withdrawn: they asked "
                                                 f"for it (or started the session that did), so it is not one of the {need}",
                                   name, **withdrawn_fields(early)))
    if len(have) < need:  # still awaiting: the gate stays shut, and says how far it got
        so_far = f"{progress(len(have), need)} ({', '.join(a.by for a in have)})"
        target.next_action = f"{so_far}; another person approves {the_step.name}: handoff approve LEDGER {name}"
    else:
        if target.state == "awaiting_approval":
            target.state = the_step.from_
            target.clear_request()
        target.next_action = f"{the_step.name} approved by {' and '.join(a.by for a in have[:need])}; the next session runs it"
        so_far = progress(need, need) if need > 1 else ""
    target.changed_at = approval.at
    msg = (f"{name}: {the_step.name} approved by {who}" + (f" from Slack ({slack.ref})" if slack else "")
           + (f" ({comment})" if comment else "")) + (f"; {so_far}" if so_far else "")
    # `at` names this approval among others of the same hash: the witness (engine.approvals) matches on it.
    records.append(_record("approval", msg, name, step=the_step.name, hash=approval.hash, user=who.user, comment=comment,
                           argv=pending.argv, digest=pending.digest, checkpoint=target.checkpoint, at=approval.at, verified=approval.verified,
                           signed=approval.signed, sig=approval.sig, via=approval.via, slack=approval.slack))
    return approval, records


def requester_rule(ledger: Ledger, name: str, step: Step, who: Who, by: str, requested_by: set[str] | None, *,
                   verified: str | None = None) -> None:
    """Refused when `who` (approving as `by`) asked for this approval: never the requester,
    nor, approving as a verified `os_user`, whoever runs as the OS user the person who asked
    ran as; and under a `count` policy never whoever started the session that asked either."""
    target = ledger.targets[name]
    asked = requested_by or set()
    # The approver's OS user: the uid that proved it, or the one the approvers table (the host's
    # or the ledger's: engine.approvals.approvers.table) gives them however they approve (Slack too).
    entry = verified_entry(ledger, by)
    uid = (who.user.strip().casefold() if verified and "os_user" in verified
           else entry.os_user.strip().casefold() if entry is not None and entry.os_user else None)
    if target.awaiting_by and (same_person(target.awaiting_by, who.name) or same_person(target.awaiting_by, who.user)):
        raise Refused(
            f"{who} asked for this approval ({target.awaiting_by}); someone else must approve it",
            title="No self-approval",
        )
    if uid is not None and ASKED_AS + uid in asked:
        raise Refused(
            f"{who} runs as OS user {who.user}, as the person who asked for this approval did; "
            "someone else must approve it",
            title="No self-approval",
        )
    need = policy_for(ledger, step).count
    started = uid is not None and STARTED_AS + uid in asked  # started the asking session, under another name
    if need > 1 and ({by.strip().casefold(), who.name.strip().casefold()} & asked or started):
        raise Refused(f"{who} asked for this approval (or started the session that did); {step.name} needs "
                      f"{need} people other than the requester", title="No self-approval")


def unapprove(ledger: Ledger, name: str, who: Who, step: str | None = None) -> Records:
    """Withdraw the unused approvals (of `step` only, when given); the next session will ask again."""
    target = _target(ledger, name)
    unused = [a for a in target.approvals if not a.used_at and (step is None or a.step == step)]
    if not unused:
        held = sorted({a.step for a in target.approvals if not a.used_at})
        if step is not None and ledger.step(step) is None and step not in held:
            raise NoSuchStep(step, [s.name for s in ledger.steps()])
        of = f" of {step}" if step else ""
        hint = f" (it holds one of {', '.join(held)})" if held else ""
        raise Refused(f"{name} holds no unused approval{of} to withdraw{hint}", title="Nothing to withdraw")
    target.approvals = [a for a in target.approvals if a not in unused]
    target.next_action = None
    target.changed_at = now_iso()
    # One record per approval, naming it exactly: an approval once withdrawn never authorises
    # a run, even written back into the file from its own journal record (engine.approvals.witness).
    return [_record("unapproval", f"{name}: approval of {a.step} by {a.by} withdrawn by {who}", name, **withdrawn_fields(a))
            for a in unused]


def reject(ledger: Ledger, name: str, who: Who, reason: str, *, step: str | None = None,
           expect_hash: str | None = None, ledger_dir: str = "") -> Records:
    """Say no to an awaiting step: the target is blocked with who and why.

    `step`, `expect_hash`: the request the person was shown (the step awaited, the hash of its
    command and checkpoint); if the target now awaits another step, or that step would run
    something else, this "no" is not to what is asked now: nothing is recorded (ApprovalChanged)."""
    target = _target(ledger, name)
    if target.state != "awaiting_approval":
        raise Refused(f"{name} is {target.state}, not awaiting approval; use `handoff block` instead", title="Nothing to reject")
    if step is not None and target.awaiting != step:
        raise ApprovalChanged(f"{name} now awaits approval of {target.awaiting}, not of {step} you were shown; "
                              "nothing was rejected: look again", seen=expect_hash or "", now=None)
    if expect_hash is not None:
        try:
            pending = pending_command(ledger, name, ledger_dir)
        except Refused as err:
            raise ApprovalChanged(f"{name} no longer waits on what you were shown: {err.message}; nothing was rejected",
                                  seen=expect_hash, now=None) from None
        if pending.hash != expect_hash:
            raise ApprovalChanged(f"{name}: what {pending.step.name} would run changed since you looked (you saw hash "
                                  f"{expect_hash}, now {pending.hash}); nothing was rejected: look again",
                                  seen=expect_hash, now=pending)
    step = target.awaiting
    reason = _clean(ledger, reason)
    _block(ledger, name, f"rejected by {who.name}: {reason}")
    return [_record("rejection", f"{name}: {step} rejected by {who}: {reason}", name, step=step, reason=reason)]


def _block(ledger: Ledger, name: str, reason: str) -> None:
    target = ledger.targets[name]
    if is_touched(ledger, name) and not target.touched_at:
        target.touched_at = now_iso()  # stays counted as touched while blocked
    target.state = "blocked"
    target.reason = reason
    target.clear_request()
    target.changed_at = now_iso()


def block(ledger: Ledger, name: str, who: Who, reason: str) -> Records:
    target = _target(ledger, name)
    if target.state == "done":
        raise Refused(f"{name} is done; there is nothing left to block", title="Already done")
    if target.in_flight is not None:
        raise Refused(f"{name} has {target.in_flight.step} running; block it when the step ends", title="Step running")
    reason = _clean(ledger, reason)
    _block(ledger, name, f"blocked by {who.name}: {reason}")
    return [_record("block", f"{name}: blocked by {who}: {reason}", name, reason=reason)]


def unblock(ledger: Ledger, name: str, who: Who, to: str, reason: str) -> Records:
    """Put a blocked or failed target where a human says it really is."""
    target = _target(ledger, name)
    if target.state not in ("blocked", "failed"):
        raise Refused(f"{name} is {target.state}, neither blocked nor failed", title="Not blocked")
    choices = sorted(s for s in ledger.states() if s not in ("blocked", "failed", "awaiting_approval"))
    if to not in ledger.states():  # not a state at all: usage, said as a missing target is
        raise NoSuchState(to, choices)
    if to not in choices:
        raise Refused(f"cannot unblock {name} to {to!r}; choose one of: {', '.join(choices)}", title="Bad state")
    before = target.state
    reason = _clean(ledger, reason)
    target.state = to
    target.reason = None
    target.last_action = f"unblocked by {who.name}: {reason}"
    target.changed_at = now_iso()
    if to == "done":
        target.touched_at = None
    return [_record("transition", f"{name}: {before} -> {to} (unblocked by {who}: {reason})", name, **{"from": before, "to": to, "reason": reason})]


def retry(ledger: Ledger, name: str, who: Who, *, force: bool, reason: str | None) -> Records:
    """A failed target goes back to the state its failed step started from."""
    target = _target(ledger, name)
    if target.state != "failed":
        raise Refused(f"{name} is {target.state}, not failed", title="Not failed")
    step = ledger.step(target.evidence.step) if target.evidence and target.evidence.step else None
    if step is None:
        raise Refused(
            f"the ledger does not say which step {name} failed in; say where it really is with "
            f"`handoff unblock LEDGER {name} --to STATE --reason WHY`",
            title="Unknown step",
        )
    if not step.reversible and not force:
        raise Refused(
            f"{name} failed in {step.name}, which is irreversible and may have half-happened. Check the real "
            f"system first, then retry with --force --reason WHY (or use `handoff reconcile`)",
            title="Irreversible step failed",
        )
    if force and not (reason and reason.strip()):
        raise Refused("--force needs --reason: say why retrying is safe", title="Reason needed")
    reason = _clean(ledger, reason)
    target.state = step.from_
    target.reason = None
    target.next_action = f"retry {step.name}"
    target.changed_at = now_iso()
    detail = f" (forced: {reason})" if force else ""
    return [_record("retry", f"{name}: failed -> {step.from_} for a retry of {step.name} by {who}{detail}", name, step=step.name, forced=force or None, reason=reason)]


def set_note(ledger: Ledger, who: Who, text: str, *, base: str | None, by_agent: bool = False) -> Records:
    """Set the handoff note; with `base`, refuse if it changed since the writer read it.
    The note it replaces is kept as `previous_note` (see `_keeps_previous`). `by_agent`:
    the writer's process runs for an agent (engine.approvals.people), whatever name it gives: a
    person's note it replaces is always kept (an agent never erases a person's words)."""
    current = ledger.handoff_note or ""
    if base is not None and current != base:
        raise Conflict(
            f"the handoff note was changed by {ledger.handoff_note_by or 'someone'} at "
            f"{ledger.handoff_note_at or 'an unknown time'} while you were editing it",
            theirs=current,
        )
    text = _clean(ledger, text) or ""
    persons = not (ledger.handoff_note_by or "").startswith(AGENT_PREFIX)
    if current.strip() and current != text and (
            (by_agent and persons) or _keeps_previous(ledger.handoff_note_by, who.name, ledger.previous_note is not None)):
        ledger.previous_note = PreviousNote(text=current, by=ledger.handoff_note_by, at=ledger.handoff_note_at)
    ledger.handoff_note = text
    ledger.handoff_note_by = who.name
    ledger.handoff_note_at = now_iso()
    return [_record("note", f"handoff note set by {who}", None, text=text)]


AGENT_PREFIX = "agent:"  # how a session signs what it writes (engine.session.loop)


def _keeps_previous(old_by: str | None, new_by: str, have_previous: bool) -> bool:
    """Does the note being replaced become `previous_note`? Yes, unless its author is
    revising it, or one session replaces another's note while an earlier note (a
    human's) is kept: a human's words must outlive any number of sessions."""
    if old_by == new_by:
        return False
    both_agents = (old_by or "").startswith(AGENT_PREFIX) and new_by.startswith(AGENT_PREFIX)
    return not (both_agents and have_previous)


def pause(ledger: Ledger, who: Who, reason: str) -> Records:
    reason = _clean(ledger, reason)
    ledger.paused = Pause(by=who.name, why=reason, at=now_iso())
    return [_record("pause", f"ledger paused by {who}: {reason}", None, reason=reason)]


def unpause(ledger: Ledger, who: Who) -> Records:
    if ledger.paused is None:
        raise Refused("the ledger is not paused", title="Not paused")
    was = ledger.paused.why
    ledger.paused = None
    return [_record("unpause", f"ledger unpaused by {who} (was: {was or 'no reason given'})", None)]


def request_stop(ledger: Ledger, who: Who) -> Records:
    if ledger.session is None:
        raise Refused("no session holds this ledger; there is nothing to stop", title="No session")
    ledger.session.stop_requested = True
    ledger.session.stop_requested_by = who.name
    return [_record("stop_request", f"stop requested by {who} for session {ledger.session.id}", None, session=ledger.session.id)]


def ledger_dir(path: str) -> str:
    """The ledger's real folder (links resolved): where its steps run and what an approval binds."""
    return os.path.dirname(os.path.realpath(path))
