"""Where a file ledger's proofs are kept: the kernel's word that a user recorded an approval
(engine.approvals.attest: files of that user's in the sticky `<ledger>.attest/`) and that one
was spent or withdrawn (engine.approvals.spent_marks: `<ledger>.spent-<uid>/`). PostgreSQL
keeps them in its database (engine.store.pg_attest); engine.store.base.Proofs is what both offer.
"""

from __future__ import annotations

import os

from engine.approvals import attest, spent_marks
from engine.ledger.model import Approval


class FileProofs:
    """Proofs of a file ledger's approvals: files of the recording user's beside it."""

    def __init__(self, ledger_path: str) -> None:
        self.ledger_path = ledger_path

    def where(self, user: str) -> str:
        """Where `user` must be able to write for a proof to be made (said when it cannot)."""
        return f"let {user} write {os.path.realpath(self.ledger_path)}{attest.SUFFIX}/"

    def record(self, target: str, approval: Approval) -> None:
        attest.record(self.ledger_path, target, approval)

    def problem(self, target: str, approval: Approval) -> str | None:
        return attest.problem(self.ledger_path, target, approval)

    def spent(self, target: str, approval: Approval, token: str | None = None) -> dict | None:
        return spent_marks.spent(self.ledger_path, target, approval, token)

    def spend(self, target: str, approval: Approval, token: str, user: str) -> str | None:
        return spent_marks.spend(self.ledger_path, target, approval, token, user)

    def withdraw_until(self, target: str, step: str, until: str) -> None:
        spent_marks.withdraw_until(self.ledger_path, target, step, until)

    def withdrawn_until(self, target: str, step: str) -> tuple[str, str] | None:
        return spent_marks.withdrawn_until(self.ledger_path, target, step)
