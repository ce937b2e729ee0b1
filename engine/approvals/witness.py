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


def approval_recorded(journal, target: str, approval: Approval) -> bool:
    """Does the journal hold the engine's own record of exactly this approval?"""
    return journal.last_of("approval", target=target, step=approval.step, hash=approval.hash, actor=approval.by,
                           user=approval.user, at=approval.at) is not None
