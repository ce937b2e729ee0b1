""""Since you last looked": what changed in a ledger since this user last had it open.

The app keeps a small per-user record (through `engine.userstate`, under the
XDG state folder, never beside the ledger): the revision and time it was last
seen, each target's state then, and the note's time. On the next open it
compares that with the ledger: targets that moved, approvals given, note edited.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from tui.timefmt import parse_ts

if TYPE_CHECKING:
    from engine.model import Ledger

MAX_LISTED = 6


def remember(ledger: "Ledger", now: datetime) -> dict[str, Any]:
    """What to store when the user stops looking."""
    return {
        "revision": ledger.revision,
        "seen_at": now.isoformat(),
        "targets": {name: t.state for name, t in ledger.targets.items()},
        "note_at": ledger.handoff_note_at,
        "note_acknowledged_at": None,
    }


def changes(previous: dict[str, Any] | None, ledger: "Ledger") -> list[str]:
    """Human lines describing what changed since `previous`; [] on a first visit or no change."""
    if not previous or "targets" not in previous:
        return []
    if previous.get("revision") == ledger.revision and previous.get("targets") and ledger.revision:
        return []
    lines: list[str] = []
    before: dict[str, str] = previous.get("targets") or {}
    moved = [(n, before[n], t.state) for n, t in ledger.targets.items() if n in before and before[n] != t.state]
    added = [n for n in ledger.targets if n not in before]
    for name, old, new in moved[:MAX_LISTED]:
        lines.append(f"{name}: {old} → {new}")
    if len(moved) > MAX_LISTED:
        lines.append(f"… and {len(moved) - MAX_LISTED} more targets moved")
    if added:
        lines.append(f"{len(added)} new target(s): {', '.join(added[:MAX_LISTED])}")
    seen = parse_ts(previous.get("seen_at"))
    if seen is not None:
        for name, target in ledger.targets.items():
            for approval in target.approvals:
                at = parse_ts(approval.at)
                if at is not None and at > seen:
                    lines.append(f"{name}: {approval.step} approved by {approval.by}")
    if ledger.handoff_note_at and ledger.handoff_note_at != previous.get("note_at"):
        lines.append(f"handoff note edited by {ledger.handoff_note_by or 'someone'}")
    return lines
