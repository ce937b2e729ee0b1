""""Since you last looked": what changed in a ledger since this user last had it open.

The app keeps a small per-user record (through `engine.userstate`, under the
XDG state folder, never beside the ledger): when it was last seen, each target's
state and checkpoint then, and a digest of the note. On the next open it
compares that with the ledger's content, not its `revision`: a hand edit in vim
leaves the revision alone and must show all the same.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tui.timefmt import parse_ts

if TYPE_CHECKING:
    from engine.api import Ledger

MAX_LISTED = 6


def _digest(text: str | None) -> str:
    return hashlib.blake2b((text or "").encode("utf-8"), digest_size=8).hexdigest()


def remember(ledger: "Ledger", now: datetime) -> dict[str, Any]:
    """What to store when the user stops looking."""
    return {
        "revision": ledger.revision,
        "seen_at": now.isoformat(),
        "targets": {name: t.state for name, t in ledger.targets.items()},
        "checkpoints": {name: t.checkpoint for name, t in ledger.targets.items() if t.checkpoint},
        "note_at": ledger.handoff_note_at,
        "note_digest": _digest(ledger.handoff_note),
    }


def changes(previous: dict[str, Any] | None, ledger: "Ledger") -> list[str]:
    """Human lines describing what changed since `previous`; [] on a first visit or no change."""
    if not previous or "targets" not in previous:
        return []
    lines: list[str] = []
    before: dict[str, str] = previous.get("targets") or {}
    moved = [(n, before[n], t.state) for n, t in ledger.targets.items() if n in before and before[n] != t.state]
    added = [n for n in ledger.targets if n not in before]
    removed = [n for n in before if n not in ledger.targets]
    for name, old, new in moved[:MAX_LISTED]:
        lines.append(f"{name}: {old} → {new}")
    if len(moved) > MAX_LISTED:
        lines.append(f"… and {len(moved) - MAX_LISTED} more targets moved")
    checkpoints: dict[str, str] = previous.get("checkpoints") or {}
    moved_names = {n for n, _, _ in moved}
    drifted = [n for n, t in ledger.targets.items()
               if n in checkpoints and n not in moved_names and t.checkpoint != checkpoints[n]]
    for name in drifted[:MAX_LISTED]:
        lines.append(f"{name}: checkpoint {checkpoints[name]} → {ledger.targets[name].checkpoint or '(none)'}")
    if added:
        lines.append(f"{len(added)} new target(s): {', '.join(added[:MAX_LISTED])}")
    if removed:
        lines.append(f"{len(removed)} target(s) no longer in the file: {', '.join(removed[:MAX_LISTED])}")
    seen = parse_ts(previous.get("seen_at"))
    if seen is not None:
        for name, target in ledger.targets.items():
            for approval in target.approvals:
                at = parse_ts(approval.at)
                if at is not None and at > seen:
                    lines.append(f"{name}: {approval.step} approved by {approval.by}")
    digest = previous.get("note_digest")
    note_changed = (digest != _digest(ledger.handoff_note)) if digest is not None else \
        bool(ledger.handoff_note_at and ledger.handoff_note_at != previous.get("note_at"))
    if note_changed and ledger.handoff_note_at and ledger.handoff_note_at == previous.get("note_at"):
        lines.append("handoff note changed by hand (its author and time were not updated)")
    elif note_changed:
        lines.append(f"handoff note edited by {ledger.handoff_note_by or 'someone'}")
    return lines
