"""The one place the TUI calls the engine.

`Controller` wraps an `engine.api.LedgerHandle`. Its methods are blocking and
run in the app's thread workers; they return plain values (or raise the
engine's errors, which carry a title and a message). Widgets never see the
handle, so wiring to the engine, and faking it, happens here only.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from engine.api import DRIFT_UNCHECKED
from tui.messages import Snapshot

if TYPE_CHECKING:
    from engine.api import Ledger


def open_handle(location: str, *, actor: str | None = None, read_only: bool = False) -> Any:
    """Open the ledger through the engine; raises `engine.errors.LedgerInvalid`."""
    from engine.api import open_ledger

    return open_ledger(location, actor=actor, read_only=read_only)


def _state_key(handle: Any, viewer: str | None) -> str:
    try:
        key = f"tui:{handle.path.resolve()}"
    except (OSError, RuntimeError, AttributeError):  # RuntimeError: a symlink loop (Python < 3.13)
        key = f"tui:{handle.location}"
    return f"{key}#viewer={viewer}" if viewer else key


class Controller:
    """Blocking engine calls, one method per thing the TUI needs."""

    def __init__(self, handle: Any, *, viewer: str | None = None) -> None:
        self.handle = handle
        self.viewer = viewer  # a served viewer's label (tui.viewer): their own "since you last looked"
        # Named once, as the ledger opened: the file may later turn into a symlink loop (resolve
        # raised RuntimeError on quit, a traceback on the terminal) or lead elsewhere.
        self._user_state_key = _state_key(handle, viewer)

    # -- facts about the handle --------------------------------------------------

    @property
    def read_only(self) -> bool:
        return bool(self.handle.read_only)

    @property
    def read_only_reason(self) -> str | None:
        return getattr(self.handle, "read_only_reason", None)

    @property
    def actor(self) -> str:
        return str(self.handle.actor)

    @property
    def location(self) -> str:
        """The ledger's location as shown on screen (a URL's password masked)."""
        return str(self.handle.display_location)

    @property
    def user_state_key(self) -> str:
        """Per-ledger key for this user's state (the resolved path, so links agree); a served
        viewer's key adds their label, so each viewer of `handoff-tui serve` has their own mark.
        Taken when the ledger was opened, whatever the path has become since."""
        return self._user_state_key

    # -- reading -----------------------------------------------------------------

    @property
    def ledger_dir(self) -> str | None:
        """The folder `{ledger_dir}` stands for in this ledger's templates."""
        return getattr(self.handle, "ledger_dir", None)

    def read(self) -> Any:
        """The engine's reading of the file now (ledger, plus missing targets and rollback);
        raises `LedgerInvalid` when it does not parse."""
        return self.handle.snapshot()

    def snapshot(self, store_snap: Any = None, seq: int = 0) -> Snapshot:
        """Read the file (unless given the engine's reading) and derive invariants and the lease."""
        if store_snap is None:
            store_snap = self.read()
        ledger = store_snap.ledger
        return Snapshot(
            ledger,
            list(self.handle.invariants(ledger)),
            self.handle.session_state(ledger),
            missing=list(getattr(store_snap, "missing", []) or []),
            rollback=list(getattr(store_snap, "rollback", []) or []),
            warnings=list(getattr(store_snap, "warnings", []) or []),
            seq=seq,
        )

    def watch(self) -> AsyncIterator[Any]:
        """The engine's watch: LedgerChanged / LedgerBroken events."""
        return self.handle.watch()

    def journal_read(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Journal records from byte `offset`, and the next offset."""
        return self.handle.journal.read(offset)

    def journal_tail(self, n: int) -> list[dict[str, Any]]:
        """The last `n` journal records (the engine reads only the end of the file)."""
        return list(self.handle.journal.tail(n))

    def journal_end_offset(self) -> int:
        """Where the journal ends now; `journal_read` from here gives only newer records."""
        return int(self.handle.journal.end_offset())

    def journal_breaks(self) -> list[str]:
        """Where the journal's hash chain breaks, one line each (reads the whole journal)."""
        return list(self.handle.journal_breaks())

    def journal_signature(self) -> tuple[Any, ...] | None:
        """Cheap: what changes when the journal does (end offset; size and mtime of its file).
        None for a journal with no file (PostgreSQL): a row updated in place moves no offset,
        so such a journal is verified on every tick."""
        path = getattr(self.handle.journal, "path", None)
        if not path:
            return None
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None  # gone: a journal that vanished is a change too, and verify says so
        return (self.handle.journal.end_offset(), st and st.st_size, st and st.st_mtime_ns)

    def history(self, target: str) -> list[dict[str, Any]]:
        return list(self.handle.history(target))

    def timeline(self, start: int | None, size: int, target: str | None = None) -> Any:
        """A page of the journal (`engine.api.TimelinePage`); start None: the newest page."""
        return self.handle.timeline(start, size, target)

    def state_at(self, rev: int) -> dict[str, dict[str, Any]]:
        """Every target as the journal says it was at revision `rev`."""
        return self.handle.state_at(rev)

    def until_progress(self, target: str) -> dict[str, Any] | None:
        """The newest reading of the `until` step running on `target`, or None."""
        return self.handle.until_progress(self.handle.load(), target)

    def pending_command(self, ledger: Ledger, target: str) -> Any:
        """What approving `target` would approve (raises `Refused` when it awaits nothing)."""
        return self.handle.pending_command(ledger, target)

    def approval_policy(self, ledger: Ledger, target: str) -> str | None:
        """`1 of 2 approvals (alice); expires after 24h` for an awaiting target under a policy;
        None under the default one (one approval, no timers) or when it awaits nothing."""
        from engine.api import describe_request

        if target not in ledger.targets:
            return None
        return describe_request(ledger, target, str(self.ledger_dir or "."), self.handle.journal)

    def next_command(self, ledger: Ledger, target: str) -> Any:
        """What would run next on `target`, or None (raises `Refused` if it cannot be rendered)."""
        return self.handle.next_command(ledger, target)

    def load_user_state(self) -> dict[str, Any]:
        from engine.api import load_user_state

        return load_user_state(self.user_state_key) or {}

    def save_user_state(self, data: dict[str, Any]) -> bool:
        """Save this user's mark unless a newer one is stored (another tab or terminal of theirs
        saw a later reading); True if saved. Per-user state lives under the XDG state folder
        (the engine's helper), never beside the ledger, so it is allowed in read-only mode too."""
        from engine.api import advance_user_state

        return bool(advance_user_state(self.user_state_key, data))

    # -- mutations (each raises ReadOnly / Refused / Conflict from the engine) ---

    def approve(self, target: str, step: str | None, comment: str | None, expect_hash: str | None = None,
                expect_drift: Any = DRIFT_UNCHECKED) -> str:
        """Approve what the operator saw: the engine refuses if `expect_hash` no longer matches,
        or the target's checkpoint drift is not `expect_drift` (the one shown; None: none)."""
        self.handle.approve(target, step=step, comment=comment or None, expect_hash=expect_hash, expect_drift=expect_drift)
        return f"Approved {step or 'the awaiting step'} on {target}"

    def approve_batch(self, expect: dict[str, str], step: str, comment: str | None,
                      expect_drift: dict[str, str | None] | None = None) -> str:
        """Approve `step` on every target of `expect` (name -> the hash the operator saw), all
        or none: the engine's batch (the one `handoff approve --targets` uses) refuses the whole
        batch if one target's hash or drift (`expect_drift`: name -> the drift shown), a policy
        or an identity check fails."""
        approvals = self.handle.approve_batch(expect, step=step, comment=comment or None, expect_drift=expect_drift)
        return f"Approved {step} on {len(approvals)} target(s), one approval each: {', '.join(expect)}"

    def reject(self, target: str, reason: str, *, step: str | None = None, expect_hash: str | None = None) -> str:
        """Reject what the operator saw: the engine refuses if `target` no longer awaits `step`,
        or its command and checkpoint no longer have `expect_hash`."""
        self.handle.reject(target, reason, step=step, expect_hash=expect_hash)
        return f"Rejected {target}: {reason}"

    def set_note(self, text: str, base: str | None) -> str:
        self.handle.set_note(text, base=base)
        return "Handoff note saved"

    def ack_note(self) -> str:
        self.handle.ack_note()
        return "Handoff note acknowledged"

    def pause(self, reason: str) -> str:
        self.handle.pause(reason)
        return f"Paused: {reason}"

    def unpause(self) -> str:
        self.handle.unpause()
        return "Unpaused"

    def retry(self, target: str, force: bool = False, reason: str | None = None) -> str:
        self.handle.retry(target, force=force, reason=reason)
        return f"{target} queued for retry" + (" (forced)" if force else "")

    def block(self, target: str, reason: str) -> str:
        self.handle.block(target, reason)
        return f"Blocked {target}"

    def unblock(self, target: str, to: str, reason: str) -> str:
        self.handle.unblock(target, to, reason)
        return f"Unblocked {target} to {to}"

    def start_session(self) -> str:
        pid = self.handle.start_session()
        return f"Session started (pid {pid})"

    def unapprove(self, target: str) -> str:
        steps = self.handle.unapprove(target)
        return f"Approval of {steps} withdrawn on {target}; the next session will ask again"

    def accept_removal(self) -> str:
        remaining = self.handle.accept_removal()
        return f"Removal accepted; {remaining} targets remain"

    def accept_rollback(self) -> str:
        revision = self.handle.accept_rollback()
        return f"Rollback accepted; the file's revision {revision} stands"

    def request_stop(self) -> str:
        self.handle.request_stop()
        return "Asked the session to stop after its current step"
