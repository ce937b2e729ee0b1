"""Approvals that can never be used: unused ones whose hash no longer matches what their
step would run (the command, its timeout or the checkpoint changed since, or they were
given under an older binding). A session will ask again; `check` says so (a warning)."""

from __future__ import annotations

from engine.errors import HandoffError
from engine.model import Ledger
from engine.render import approval_hash


def stale_approvals(ledger: Ledger, ledger_dir: str) -> list[str]:
    """One sentence per unused approval that no longer matches (rendered in `ledger_dir`)."""
    out = []
    for name, t in ledger.targets.items():
        for a in t.approvals:
            step = ledger.step(a.step)
            if a.used_at or step is None or step.reversible or not step.run:
                continue
            try:
                current = approval_hash(name, t, step, ledger_dir=ledger_dir)
            except HandoffError:
                continue  # an unknown placeholder: the analysis reports the step itself
            if a.hash != current:
                out.append(f"{name}: the approval of {a.step} by {a.by} at {a.at} no longer matches what would run "
                           f"(hash {a.hash}, now {current}); approve it again")
    return out
