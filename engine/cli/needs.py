"""Every target that needs a person, and why: what `handoff status` lists beside the approvals.

A failed or blocked target (a checkpoint that drifted is one: the session blocks it and
says so), and a target that carries an open discrepancy in any other state. Targets
waiting on an approval are listed apart (with the command and hash to approve).
"""

from __future__ import annotations

from engine.ledger.model import Ledger

SHOWN = 20  # lines in the text form; the rest are counted ("and N more"), --json has them all


def needs_a_person(ledger: Ledger) -> list[dict[str, str]]:
    """[{target, state, why}] in ledger order."""
    out = []
    for name, t in ledger.targets.items():
        reason = t.reason or "no reason recorded"
        if t.state in ("failed", "blocked"):
            kind = "drifted" if reason.startswith("checkpoint drift") else t.state
            out.append({"target": name, "state": t.state, "why": f"{kind}: {reason}"})
        elif t.reason and t.state not in ("done", "awaiting_approval"):
            out.append({"target": name, "state": t.state, "why": f"open discrepancy: {reason}"})
    return out


def lines(items: list[dict[str, str]]) -> list[str]:
    """The text form: one line a target, at most SHOWN."""
    shown = [f"needs a person: {i['target']} ({i['state']}) {i['why']}" for i in items[:SHOWN]]
    if len(items) > SHOWN:
        shown.append(f"needs a person: ... and {len(items) - SHOWN} more (`handoff status --json` lists all)")
    return shown
