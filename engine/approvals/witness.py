"""An approval's witness: the journal record the engine wrote when a person approved.

A ledger entry alone proves nothing (whoever can write the file can write one, and its
hash is a plain sha256 anyone can compute). `handoff approve` journals every approval
with its target, step, hash, approver and time; an approval authorises a spawn only
when that record exists. This is the one place that looks it up; the journal finds it
through its witness index (engine.audit.index: every field matched here is indexed),
so its reach does not depend on the journal's size.
"""

from __future__ import annotations

from engine.ledger.model import Approval


def _fields(approval: Approval) -> dict:
    """What names exactly this approval in the engine's `approval` record (its target aside)."""
    return {"step": approval.step, "hash": approval.hash, "actor": approval.by, "user": approval.user, "at": approval.at}


def approval_record(journal, target: str, approval: Approval) -> dict | None:
    """The engine's own journal record of exactly this approval, or None."""
    return journal.last_of("approval", target=target, **_fields(approval))


def approval_recorded(journal, target: str, approval: Approval) -> bool:
    """Does the journal hold the engine's own record of exactly this approval?"""
    return approval_record(journal, target, approval) is not None


def withdrawn_fields(approval: Approval) -> dict:
    """What an `unapproval` record says of the approval it takes back (engine.ledger.ops)."""
    return {"step": approval.step, "hash": approval.hash, "approval_by": approval.by, "approval_at": approval.at}


def withdrawal(journal, target: str, approval: Approval) -> dict | None:
    """The engine's record of exactly this approval being taken back (`handoff unapprove`,
    or replaced as stale), or of that record lost (a `journal_gap` naming it), or None.
    Once withdrawn it never authorises a run again, even written back into the file with
    its own `approval` record still in the journal."""
    fields = withdrawn_fields(approval)
    # The intent, journaled before the ledger changed, counts as the withdrawal: a crash after
    # the write may have left no other record (engine.api.JOURNALED_FIRST).
    found = journal.last_of("unapproval", target=target, **fields)
    if found is None:
        intent = journal.last_of("unapproval_intent", target=target, **fields)
        if intent is not None and journal.last_of("intent_cancelled", target=target, cancels=intent.get("seq")) is None:
            found = intent
    if found is None:
        # Withdrawn in the ledger, its record lost (the journal's lock held past its bound, a
        # full disk): the gap the next append wrote names it, and it counts the same.
        found = journal.last_of("journal_gap", target=target, lost_kind="unapproval", lost=fields)
    return found


def lost_record(journal, target: str, approval: Approval) -> dict | None:
    """The `journal_gap` recording that exactly this approval's own record could not be
    written (the journal's lock held past its bound, a full disk), or None. It explains a
    missing witness and changes nothing: the approval still never authorises a run."""
    gap = journal.last_of("journal_gap", target=target, lost_kind="approval")
    lost = gap.get("lost") if gap else None
    return gap if isinstance(lost, dict) and all(lost.get(k) == v for k, v in _fields(approval).items()) else None
