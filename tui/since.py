""""Since you last looked": what changed in a ledger since this user last had it open.

The app keeps a small per-user record (through `engine.host.userstate`, under the
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


def _pause_text(ledger: Ledger) -> str | None:
    paused = ledger.paused
    return f"paused by {paused.by or 'someone'}: {paused.why or 'no reason given'}" if paused is not None else None


def _moved(name: str, old: str, target: Any) -> str:
    """One moved target: why it is blocked or failed (who rejected, and why), and a flag on a
    move out of done, which no engine step makes (a hand edit, or an old copy)."""
    line = f"{name}: {old} → {target.state}"
    if target.state in ("blocked", "failed") and target.reason:
        line += f" ({target.reason})"
    if old == "done":
        line = f"⚠ {line}: no engine step moves a target out of done; a hand edit? check before it runs again"
    return line


def remember(ledger: Ledger, now: datetime) -> dict[str, Any]:
    """What to store when the user stops looking."""
    return {
        "revision": ledger.revision,
        "seen_at": now.isoformat(),
        "targets": {name: t.state for name, t in ledger.targets.items()},
        "checkpoints": {name: t.checkpoint for name, t in ledger.targets.items() if t.checkpoint},
        "paused": _pause_text(ledger),
        "note_at": ledger.handoff_note_at,
        "note_digest": _digest(ledger.handoff_note),
    }


def changes(previous: dict[str, Any] | None, ledger: Ledger) -> list[str]:
    """Human lines describing what changed since `previous`; [] on a first visit or no change."""
    if not previous or "targets" not in previous:
        return []
    lines: list[str] = []
    before: dict[str, str] = previous.get("targets") or {}
    moved = [(n, before[n], t.state) for n, t in ledger.targets.items() if n in before and before[n] != t.state]
    added = [n for n in ledger.targets if n not in before]
    removed = [n for n in before if n not in ledger.targets]
    # Moves out of done first: they are the ones that can run a finished step again.
    moved.sort(key=lambda m: m[1] != "done")
    for name, old, _new in moved[:MAX_LISTED]:
        lines.append(_moved(name, old, ledger.targets[name]))
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
    if "paused" in previous and previous.get("paused") != _pause_text(ledger):
        now = _pause_text(ledger)
        lines.append(now if now else f"unpaused (it was {previous['paused']})")
    digest = previous.get("note_digest")
    note_changed = (digest != _digest(ledger.handoff_note)) if digest is not None else \
        bool(ledger.handoff_note_at and ledger.handoff_note_at != previous.get("note_at"))
    if note_changed and ledger.handoff_note_at and ledger.handoff_note_at == previous.get("note_at"):
        lines.append("handoff note changed by hand (its author and time were not updated)")
    elif note_changed:
        lines.append(f"handoff note edited by {ledger.handoff_note_by or 'someone'}")
    return lines
