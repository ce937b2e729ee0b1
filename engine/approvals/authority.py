"""May this approval authorise a spawn? Asked under the fence, right before an
irreversible step starts (engine.session.steps), after the guard found an unused
approval bound to the exact command and checkpoint.

It must also have its own journal record (engine.approvals.witness): an approval
written into the file by anyone but the engine never authorises; and for a verified
approver (engine.approvals.approvers) its uid record or its signature must still hold, and
an `os_user` approval (and one from Slack, where the Slack process's OS user is named) its proof of that user's:
a file beside a file ledger (engine.approvals.attest), a row a PostgreSQL ledger's database
says that user's role recorded (engine.store.pg_attest). An approval refused
here is taken off the target (the journal keeps a copy in the refusal's record) and the
target awaits a person again, its `reason` saying why, so nothing retries it in a loop
and a person's fresh approval is not blocked by the bad one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.approvals.approvers import kernel_proves, recheck
from engine.approvals.policy import policy_for, standing
from engine.approvals.spent_marks import WITHDRAWN
from engine.approvals.witness import approval_record, lost_record, withdrawal
from engine.codec.timefmt import now_iso, parse_iso
from engine.ledger.model import Approval, Ledger, Step

# `handoff approve` writes the ledger, then the journal: for this long after `at` a
# missing record may be on its way, and the step waits instead of being refused.
RECORDING_GRACE = 5.0


@dataclass(frozen=True)
class Unauthorised:
    """Why an approval does not authorise; `settling`: it may still, in a moment."""

    why: str
    settling: bool = False


def _copy_of_a_used_one(ledger: Ledger, name: str, approval: Approval) -> Approval | None:
    """Another approval on `name` saying exactly what `approval` says (step, hash, who, when)
    that was used: `approval` is a copy of a spent one, put back beside it (or `approval`
    is that one, used by this intent, and the copy was used before). None: there is none."""
    key = (approval.step, approval.hash, approval.by, approval.at)
    used = [a for a in ledger.targets[name].approvals if (a.step, a.hash, a.by, a.at) == key and a.used_at]
    # By what they say, not by identity (copy-on-change views): the approval itself, once this intent used it, is one.
    return used[-1] if len(used) > (1 if approval.used_at else 0) else None


def unauthorised(journal, ledger: Ledger, name: str, approval: Approval, *, now: float | None = None,
                 digest: str | None = None) -> Unauthorised | None:
    """None when `approval` may authorise the spawn of its step on `name`; else why not.
    `digest`: the whole sha256 of what would run now (engine.ledger.render.approval_digest),
    compared with the one the approval's record keeps: the hash in the ledger is only its start."""
    twin = _copy_of_a_used_one(ledger, name, approval)
    if twin is not None:
        return Unauthorised(f"approval already used: the approval of {approval.step} by {approval.by} at {approval.at} "
                            f"stands twice on {name}, and one was used ({twin.used_at}), so it never authorises another "
                            "run: a person approves again")
    record = approval_record(journal, name, approval)
    if record is None:
        at = parse_iso(approval.at)
        age = (time.time() if now is None else now) - at if at is not None else None
        settling = age is not None and 0 <= age < RECORDING_GRACE
        gap = None if settling else lost_record(journal, name, approval)
        if gap is not None:
            return Unauthorised(
                f"approval not recorded by the engine: the journal record of the approval of {approval.step} by "
                f"{approval.by} at {approval.at} could not be written (journal_gap of revision {gap.get('rev')}: "
                f"{gap.get('error')}), so it never authorises a run: approve again")
        return Unauthorised(
            f"approval not recorded by the engine: the approval of {approval.step} by {approval.by} at {approval.at} "
            "has no journal record of its own (written into the file by hand?), so it never authorises a run",
            settling=settling)
    kept = record.get("digest")
    if digest is not None and isinstance(kept, str) and kept != digest:
        return Unauthorised(f"approval for another command: the approval of {approval.step} by {approval.by} at {approval.at} "
                            f"was given for a command whose whole digest is {kept[:24]}..., and what would run now is "
                            f"{digest[:24]}... (only their first {len(approval.hash)} hex digits, the hash shown, agree), so "
                            "it never authorises a run: a person looks at the command and approves again")
    proofs = journal.proofs()
    mark = proofs.spent(name, approval) if proofs is not None else None
    if mark is not None and str(mark.get("token")).startswith(WITHDRAWN):  # for every user, whatever the journal says
        return Unauthorised(f"approval withdrawn: the approval of {approval.step} by {approval.by} at {approval.at} was "
                            f"taken back ({mark['witness']}, {mark['actor']} at {mark['ts']}), so it never authorises a "
                            "run: a person approves again")
    until = proofs.withdrawn_until(name, approval.step) if proofs is not None else None
    # `handoff unapprove` took back every approval given before then (to the second: one given in the same second
    # as the withdrawal, a person approving again at once, stands).
    if until is not None and approval.at < until[0]:
        return Unauthorised(f"approval withdrawn: approvals of {approval.step} on {name} given before {until[0]} were taken "
                            f"back ({until[1]}), and this one of {approval.by} is from {approval.at}, so it never "
                            "authorises a run: a person approves again")
    taken_back = withdrawal(journal, name, approval)
    if taken_back is not None:
        return Unauthorised(f"approval withdrawn: the approval of {approval.step} by {approval.by} at {approval.at} was "
                            f"taken back ({taken_back.get('msg') or 'unapproval'}, {taken_back.get('ts')}), so it never "
                            "authorises a run: a person approves again")
    why = recheck(ledger, name, approval)
    if not why and proofs is not None and kernel_proves(ledger, approval):
        why = proofs.problem(name, approval)  # the kernel's (or the database's) word, not only the approving process's
    if why:
        return Unauthorised(f"approval not verified: {why}, so it never authorises a run")
    return None


def refuse(ledger: Ledger, name: str, step: Step, approval: Approval, why: str, *, ledger_arg: str) -> None:
    """Inside the fence's transaction: drop `approval` and make `name` await a person again."""
    target = ledger.targets[name]
    # By what it says, not by identity: inside a transaction targets are read through
    # copy-on-change views (engine.store.cow_views), a new object at every read.
    key = (approval.step, approval.hash, approval.by, approval.at)
    target.approvals = [a for a in target.approvals if (a.step, a.hash, a.by, a.at) != key or a.used_at]  # used: history
    target.state, target.awaiting = "awaiting_approval", step.name
    target.awaiting_since = target.changed_at = now_iso()
    target.reason = why
    target.next_action = f"a person approves {step.name}: handoff approve {ledger_arg} {name}"


@dataclass(frozen=True)
class Refusal:
    """What the fence does with an approval that may not authorise: `record` is the
    journal record to write once the refusal is on disk (None: write nothing, decide again)."""

    why: str
    record: dict | None


def spent_together(ledger: Ledger, name: str, step: Step, approval: Approval) -> list[Approval]:
    """What a run of `step` under `approval` spends: under a `count` policy the co-approvals
    that complete the count, then `approval` itself (the one its `step_start` names)."""
    need = policy_for(ledger, step).count
    return [a for a in standing(ledger, name, step, approval.hash)[:need] if a is not approval] + [approval]


def check_in_fence(journal, ledger: Ledger, name: str, step: Step, approval: Approval, ledger_arg: str,
                   used_by: str | None = None, *, digest: str | None = None) -> Refusal | None:
    """Under the fence, inside the intent's transaction: None when `approval` (and, under a
    `count` policy, each co-approval, then marked used with it) authorises; else a
    Refusal, with the target already set to await a person (unless still settling).
    `digest`: the whole digest of the command about to run (see `unauthorised`)."""
    together = spent_together(ledger, name, step, approval)
    for one in together:
        found = unauthorised(journal, ledger, name, one, digest=digest)
        if found is None:
            continue
        if found.settling:  # the approving command writes its record right after the ledger
            return Refusal(f"approval not recorded by the engine yet: the approval of {one.step} by {one.by} at {one.at} "
                           "has no journal record of its own (the approving command writes it right after the ledger; "
                           "one written into the file by hand never gets one)", None)
        record = {"kind": "approval_refused", "target": name, "step": step.name, "why": found.why,
                  "approval": one.model_dump(exclude_none=True)}
        refuse(ledger, name, step, one, found.why, ledger_arg=ledger_arg)
        return Refusal(found.why, record)
    for one in together[:-1]:  # the co-approvals are spent with the one that completed them
        one.used_at, one.used_by = now_iso(), used_by
    return None


def launch_refusal(journal, ledger: Ledger, name: str, approval: Approval | None, *, digest: str | None = None) -> str | None:
    """At the spawn itself (the fence's lock held): why the intent's approval no longer
    authorises, or None. It must still be on the target, marked used, and still pass."""
    if approval is None:
        return f"the intent on {name} names no approval to start its irreversible step under"
    target = ledger.targets.get(name)
    mine = [a for a in (target.approvals if target else []) if (a.hash, a.by, a.at) == (approval.hash, approval.by, approval.at)]
    if not mine:
        return f"the approval of {approval.step} by {approval.by} at {approval.at} is no longer in the ledger"
    found = unauthorised(journal, ledger, name, mine[0], digest=digest)
    return found.why if found is not None else None
