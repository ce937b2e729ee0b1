"""Batch approval: one person approves one step on several targets at once
(`handoff approve LEDGER --step cordon --targets 'prod-*'`).

It is exactly N single approvals, each with the safety of one: every target's command
and hash is shown and checked (`expect` carries the hash the person was shown), the
requester rule and the step's policy (count, verified approvers) are applied per target
by `engine.ledger.ops.approve`, and each approval gets its own journal record. A target
the approver asked for is left out when the batch is shown, as one already approved is. The batch is
one transaction: if any target's approval is refused (its command, checkpoint or
checkpoint drift changed since it was shown, it no longer waits, its requester is the approver), the
whole batch is refused, every refused target is named, and nothing is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from engine.approvals.policy import policy_for, standing
from engine.errors import NoSuchTarget, Refused
from engine.ledger.drift import DRIFT_UNCHECKED
from engine.ledger.model import Approval, Ledger, Step
from engine.ledger.ops import PendingCommand, Records, Who, approve, pending_command, same_person

WILDCARD = re.compile(r"[*?[]")  # what makes a --targets word a pattern (fnmatch's), not a name


@dataclass
class Selection:
    """What a `--targets` pattern picks: the targets the batch approves (with what each
    would run) and those it matched but leaves out, with why."""

    chosen: list[tuple[str, PendingCommand]]
    skipped: list[tuple[str, str]]


def patterns(text: str) -> list[str]:
    """`prod-*,edge-1` -> ['prod-*', 'edge-1']: comma-separated shell-style patterns."""
    return [p.strip() for p in text.split(",") if p.strip()]


def matching(names: Iterable[str], text: str) -> list[str]:
    """The `names` (in their order) that one of `text`'s patterns matches: what
    `--targets` and the TUI's `:mark` / `:unmark` select."""
    wanted = patterns(text)
    return [n for n in names if any(fnmatchcase(n, p) for p in wanted)]


def select(ledger: Ledger, pattern: str, step: str, ledger_dir: str, approver: str,
           refusal: Callable[[str, Step], str | None] | None = None) -> Selection:
    """The targets matching `pattern` (in ledger order) that an approval of `step` by
    `approver` would move; the others it matches are skipped with the reason a single
    approval would give. `refusal(name, step)`: why the approver may not approve that
    target (they asked for it: engine.api.Handle.select_batch), or None. Raises Refused
    when the pattern matches no target at all, and NoSuchTarget for a name in it (no
    wildcard) the ledger does not have: `db-1,db-22` meant two targets, not db-1 alone;
    NoSuchStep (from the first target's `pending_command`) for a `step` its runbook lacks."""
    wanted = patterns(pattern)
    if not wanted:
        raise Refused("--targets is empty: give a pattern such as 'prod-*' or a list 'db-1,db-2'", title="No targets")
    for word in wanted:
        if not WILDCARD.search(word) and word not in ledger.targets:
            raise NoSuchTarget(word, ledger.targets)
    names = matching(ledger.targets, pattern)
    if not names:
        sample = ", ".join(list(ledger.targets)[:5])
        raise Refused(f"--targets {pattern!r} matches no target in this ledger (targets include {sample}); "
                      "nothing was approved", title="No such target")
    chosen, skipped = [], []
    for name in names:
        try:
            pending = pending_command(ledger, name, ledger_dir, step)
        except Refused as err:
            skipped.append((name, err.message))
            continue
        why = refusal(name, pending.step) if refusal is not None else None
        if why:  # one target the approver may not approve would refuse the whole batch
            skipped.append((name, why))
            continue
        held = standing(ledger, name, pending.step, pending.hash)
        mine = next((a for a in held if same_person(a.by, approver)), None)
        if mine is not None or (held and policy_for(ledger, pending.step).count <= 1):
            who = (mine or held[0]).by
            skipped.append((name, f"already approved by {who}"))
            continue
        chosen.append((name, pending))
    return Selection(chosen, skipped)


def approve_all(ledger: Ledger, expect: dict[str, str], who: Who, *, step: str, comment: str | None, ledger_dir: str,
                signed: dict, requested_by: dict[str, set[str]],
                expect_drift: Mapping[str, str | None] | None = None, where: str | None = None) -> tuple[list[Approval], Records]:
    """Approve `step` on every target of `expect` (name -> the hash the approver was
    shown), in one change of `ledger`: every approval or none (Refused naming each
    target that was refused, and why). `expect_drift` (name -> the checkpoint drift shown
    for it; a name left out: none was shown) binds each target's drift as `approve` does;
    without it, no target's approval is bound to a drift."""
    approvals: list[Approval] = []
    records: Records = []
    refused: list[str] = []
    for name, digest in expect.items():
        try:
            approval, recs = approve(ledger, name, who, step=step, comment=comment, ledger_dir=ledger_dir,
                                     expect_hash=digest, signed=signed.get(name), requested_by=requested_by.get(name),
                                     expect_drift=DRIFT_UNCHECKED if expect_drift is None else expect_drift.get(name),
                                     where=where)
        except (Refused, NoSuchTarget) as err:  # ApprovalChanged too; or taken out of the file since it was shown
            refused.append(f"{name}: {err.message}")
            continue
        approvals.append(approval)
        records.extend(recs)
    if refused:
        raise Refused(f"the batch approval of {step} on {len(expect)} target(s) was refused, nothing was approved; "
                      f"{len(refused)} refused: " + "; ".join(refused), title="Batch refused")
    return approvals, records
