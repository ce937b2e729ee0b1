"""What needs a person, and what a row may promise about what happens next.

A target's recorded `next_action` is text some writer left behind: the session's
"a human approves link: handoff approve ..." stays on a target after it is rejected,
and `approve` writes "the next session runs it" even when the next session will
refuse the target for a checkpoint drift. The table, the detail view and the header
show what the engine will really do instead, derived here from the target as it is
now; nothing here writes the ledger.
"""

from __future__ import annotations

from typing import Any

from engine.api import checkpoint_drift, shell_word

DRIFT_WORD = "≠ DRIFT"
OUTSIDE_WORD = "changed outside the engine"
# A promise that only an awaiting target can keep.
_APPROVE_PROMISES = ("a human approves", "handoff approve")


def drift(target: Any) -> str | None:
    """The recorded checkpoint mismatch of `target`, or None."""
    return checkpoint_drift(target)


def outside(target: Any) -> dict[str, Any] | None:
    """The target's `changed_outside` mark (engine.store.outside: a hand edit no runbook
    step makes), or None. The mark is file data: a hand edit can make it any shape."""
    mark = getattr(target, "changed_outside", None)
    if not mark:
        return None
    return mark if isinstance(mark, dict) else {"fields": [str(mark)]}


def outside_fields(mark: dict[str, Any]) -> str:
    """The changed fields, comma-separated ("fields" when the mark names none)."""
    fields = mark.get("fields")
    if isinstance(fields, (list, tuple)):
        return ", ".join(str(f) for f in fields) or "fields"
    return str(fields) if fields else "fields"


def reconcile_command(location: str | None, name: str) -> str:
    """What a person runs once they checked the real system (`handoff reconcile`'s contract), each
    word as one shell word to paste (`LEDGER` where the location is not known)."""
    where = shell_word(location) if location else "LEDGER"
    return f"handoff reconcile {where} {shell_word(name)} --to STATE --reason WHY"


def next_shown(name: str, target: Any) -> str:
    """What the screen says happens next on `name` (never what the engine will refuse)."""
    mark = outside(target)
    if mark is not None:  # a session stops (exit 3) on it before any action
        return (f"{OUTSIDE_WORD} ({outside_fields(mark)}): nothing acts on it until "
                f"`{reconcile_command(None, name)}`")
    if drift(target) is not None:
        return (f"reconcile first: sessions refuse {name} until `handoff reconcile LEDGER {name} "
                "--accept-checkpoint` or `--to STATE` (with --reason)")
    recorded = target.next_action or ""
    if target.state in ("blocked", "failed") and (not recorded or any(p in recorded for p in _APPROVE_PROMISES)):
        # Nothing recorded (a block by hand, a failed step) says nothing at all; the screen still says what moves it.
        verb = "unblocks it (u)" if target.state == "blocked" else "retries (r) or unblocks it (u)"
        return f"a person {verb}; nothing runs until then"  # the action first: an 80-column table cuts the rest
    return recorded
