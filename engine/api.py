"""The engine's public API: what the CLI, the TUI and the session use.

    h = open_ledger("ledger.yaml", actor="alice")
    ledger = h.load()
    h.approve("db-18", comment="lag 1.4s, go")

Every mutation goes through the store's transaction and is journaled with who did it
(the `actor` name and the OS user, always both) and the revision it produced. A
read-only handle refuses every mutation and writes nothing anywhere near the ledger.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable, TypeVar

from engine import ops
from engine.errors import Conflict, HandoffError, LedgerInvalid, ReadOnly, Refused, UsageError
from engine.identity import hostname, os_user
from engine.invariants import InvariantStatus, evaluate, journal_readings
from engine.model import BASE_STATES, SUMMARY_ORDER, Approval, Ledger, Step, Target
from engine.render import approval_hash
from engine.store import Snapshot, open_store
from engine.textsafe import one_line, visible
from engine.timefmt import age_text
from engine.userstate import load_user_state, save_user_state

try:
    from engine.errors import ApprovalChanged
except ImportError:  # issue-7 shim: the lead's exactly-once work adds it to engine.errors

    class ApprovalChanged(Conflict):  # type: ignore[no-redef]  # issue-7 shim
        """What an approval was for changed since the approver looked (issue-7 shim)."""

        title = "Changed since you looked"

        def __init__(self, message: str, *, seen: str | None, now: "PendingCommand | None", **kw: Any) -> None:
            super().__init__(message, **kw)
            self.seen = seen
            self.now = now

T = TypeVar("T")


@dataclass
class LedgerChanged:
    """The ledger on disk changed and parses."""

    ledger: Ledger
    snapshot: Snapshot


@dataclass
class LedgerBroken:
    """The ledger on disk changed and does not parse; the last good state still stands."""

    error: LedgerInvalid


@dataclass
class PendingCommand:
    """What an approval would approve: the exact argv, bound to the checkpoint."""

    step: Step
    argv: list[str]
    irreversible: bool
    checkpoint: str | None
    hash: str


def _writable(path: str) -> str | None:
    """Why this user cannot change the ledger, or None if they can."""
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    if not os.access(real, os.W_OK):
        return f"{path} is not writable by {os_user()}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable by {os_user()} (writes replace the file)"
    return None


class LedgerHandle:
    """One ledger, opened by one person (or session)."""

    def __init__(self, location: str, *, actor: str | None = None, read_only: bool = False) -> None:
        self.location = location
        self.path = Path(location)
        self.os_user = os_user()
        self.actor = actor or self.os_user
        self.who = ops.Who(self.actor, self.os_user)
        is_url = location.startswith(("postgresql://", "postgres://"))
        reason = None if (read_only or is_url) else _writable(location)
        self.read_only = read_only or reason is not None
        self.read_only_reason = "--read-only" if read_only else reason
        self.store = open_store(location, read_only=self.read_only)
        self.journal = self.store.open_journal(read_only=self.read_only)
        self.ledger_dir = os.getcwd() if is_url else ops.ledger_dir(location)
        self._snapshot: Snapshot | None = None

    # -- reading -----------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        snap = _rollback_shim(self.store, self.store.snapshot())
        self._snapshot = snap
        self.journal.set_redact(snap.ledger.redact)
        return snap

    def load(self) -> Ledger:
        """The ledger as it is now (shared object: do not change it; use the methods)."""
        return self.snapshot().ledger

    async def watch(self, stop_event: asyncio.Event | None = None) -> AsyncIterator[LedgerChanged | LedgerBroken]:
        """Changes as they happen (any writer: a session, another operator, vim)."""
        async for event in self.store.watch(stop_event):
            if isinstance(event, LedgerInvalid):
                yield LedgerBroken(event)
            else:
                self._snapshot = _rollback_shim(self.store, event)
                yield LedgerChanged(event.ledger, self._snapshot)

    def invariants(self, ledger: Ledger | None = None) -> list[InvariantStatus]:
        """Each invariant's status now; metric values are the session's last readings."""
        return evaluate(ledger or self.load(), journal_readings(self.journal))

    def pending_command(self, ledger: Ledger, target: str) -> PendingCommand:
        step = ops.approval_step(ledger, target, None)
        argv = ops.rendered_command(ledger, target, step, self.ledger_dir)
        checkpoint = ledger.targets[target].checkpoint
        hash_ = approval_hash(target, ledger.targets[target], step.run)
        return PendingCommand(step, argv, not step.reversible, checkpoint, hash_)

    def next_command(self, ledger: Ledger, target: str) -> PendingCommand | None:
        """What would run next on `target`: the awaited step, else the first runbook step from
        where it stands; None when nothing would (done, blocked, failed, no runbook).
        Raises `Refused` when the step's template cannot be rendered for this target."""
        t = ledger.targets[target]
        if t.state == "awaiting_approval":
            return self.pending_command(ledger, target)
        if t.state in ("done", "blocked", "failed"):
            return None
        step = next((s for s in ledger.steps() if s.from_ == ledger.position(target)), None)
        if step is None or not step.run:
            return None
        argv = ops.rendered_command(ledger, target, step, self.ledger_dir)
        return PendingCommand(step, argv, not step.reversible, t.checkpoint, approval_hash(target, t, step.run))

    def session_state(self, ledger: Ledger | None = None):
        from engine.session.lease import lease_state

        ledger = ledger or self.load()
        beat = self.store.heartbeat().current()
        state = lease_state(ledger.session, beat, now=time.time(), host=hostname())
        # issue-12 shim: the Claude planner's heartbeat carries these; the merge gives them a real home.
        mine = beat if beat and ledger.session is not None and beat.get("session") == ledger.session.id else {}
        for key in ("planner", "tokens_used", "tokens_budget", "cost_usd", "allow_unenforced"):
            if not hasattr(state, key):
                setattr(state, key, mine.get(key))
        return state

    def history(self, target: str, limit: int = 200) -> list[dict[str, Any]]:
        return self.journal.for_target(target, limit)

    # -- changing ----------------------------------------------------------------

    def _change(self, fn: Callable[[Ledger], tuple[T, list[dict[str, Any]]]], *, accept_shrink: bool = False) -> T:
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); nothing was changed")
        (result, records), revision = self.store.transact(fn, accept_shrink=accept_shrink)
        if getattr(self.store, "saw_external_edit", False):
            self.journal.append(
                "external_edit",
                f"the ledger was edited outside the engine before revision {revision}; the change was applied on top of that edit",
                actor=self.actor,
                rev=revision,
            )
        for record in records:
            record = dict(record)
            kind, msg, target = record.pop("kind"), record.pop("msg"), record.pop("target", None)
            # An operation may name the user itself (approve does); the OS user is the same.
            record.setdefault("user", self.os_user)
            self.journal.append(kind, msg, actor=self.actor, rev=revision, target=target, **record)
        return result

    def approve(self, target: str, *, step: str | None = None, comment: str | None = None,
                expect_hash: str | None = None) -> Approval:
        """Approve; with `expect_hash` (what the approver saw) a changed command, checkpoint or
        state raises `ApprovalChanged` and nothing is written."""

        def fn(ledger: Ledger):
            if expect_hash is not None:  # issue-7 shim: the lead's engine checks this itself
                try:
                    now: PendingCommand | None = self.pending_command(ledger, target)
                except Refused:
                    now = None
                if now is None or now.hash != expect_hash:
                    what = "no longer awaits approval" if now is None else "has a different command or checkpoint"
                    raise ApprovalChanged(f"{target} {what} since you looked; nothing was approved",
                                          seen=expect_hash, now=now)
            return ops.approve(ledger, target, self.who, step=step, comment=comment, ledger_dir=self.ledger_dir)

        return self._change(fn)

    def unapprove(self, target: str) -> None:
        self._change(lambda l: (None, ops.unapprove(l, target, self.who)))

    def reject(self, target: str, reason: str) -> None:
        self._change(lambda l: (None, ops.reject(l, target, self.who, reason)))

    def set_note(self, text: str, *, base: str | None = None) -> None:
        self._change(lambda l: (None, ops.set_note(l, self.who, text, base=base)))

    def ack_note(self) -> None:
        """The incoming operator read the note (journal only; the ledger is not rewritten)."""
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); nothing was changed")
        ledger = self.load()
        self.journal.append("note_ack", f"handoff note acknowledged by {self.who}", actor=self.actor, rev=ledger.revision, user=self.os_user)

    def pause(self, reason: str) -> None:
        self._change(lambda l: (None, ops.pause(l, self.who, reason)))

    def unpause(self) -> None:
        self._change(lambda l: (None, ops.unpause(l, self.who)))

    def retry(self, target: str, *, force: bool = False, reason: str | None = None) -> None:
        self._change(lambda l: (None, ops.retry(l, target, self.who, force=force, reason=reason)))

    def block(self, target: str, reason: str) -> None:
        self._change(lambda l: (None, ops.block(l, target, self.who, reason)))

    def unblock(self, target: str, to: str, reason: str) -> None:
        self._change(lambda l: (None, ops.unblock(l, target, self.who, to, reason)))

    def request_stop(self) -> None:
        self._change(lambda l: (None, ops.request_stop(l, self.who)))

    def accept_removal(self) -> int:
        """Record that targets missing from the file were removed on purpose."""
        def fn(ledger: Ledger):
            return len(ledger.targets), [{"kind": "removal_accepted", "msg": f"target removal accepted by {self.who}; {len(ledger.targets)} targets remain"}]

        return self._change(fn, accept_shrink=True)

    def accept_rollback(self) -> int:  # issue-7 shim: the lead's version replaces this
        """Record that the file going back (an older revision, a lost step) was meant."""
        def fn(ledger: Ledger):
            return ledger.revision, [{"kind": "rollback_accepted", "msg": f"rollback accepted by {self.who}; revision {ledger.revision} stands"}]

        return self._change(fn)

    def start_session(self, args: list[str] | None = None) -> int:
        """Start `handoff resume` as its own detached process (own session and process
        group), so closing the TUI or losing SSH never kills a step midway."""
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); no session was started")
        log = open(os.path.realpath(self.location) + ".session.log", "ab")
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(self.location), "--as", self.actor, *(args or [])],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                cwd=self.ledger_dir,
            )
        finally:
            log.close()
        return proc.pid


def _rollback_shim(store: Any, snap: Snapshot) -> Snapshot:  # issue-7 shim
    """`Snapshot.rollback` until the lead's store fills it: only "the revision went backwards"."""
    if "rollback" in getattr(type(snap), "__dataclass_fields__", {}):
        return snap
    found: list[str] = []
    record = store.last_write() if snap.external_edit and hasattr(store, "last_write") else None
    written = record.get("revision") if isinstance(record, dict) else None
    if isinstance(written, int) and snap.ledger.revision < written and not _moved_on(store, snap):
        found.append(f"revision {snap.ledger.revision} is lower than the engine's last write ({written})")
    snap.rollback = found  # type: ignore[attr-defined]
    snap.warnings.extend(w for w in found if w not in snap.warnings)
    return snap


def _moved_on(store: Any, snap: Snapshot) -> bool:  # issue-7 shim
    """Whether the file changed since `snap` was read: then an engine write landed between reading
    the file and reading its record, and the older revision is no rollback."""
    from engine.store.file import digest

    try:
        return digest(store._raw()) != snap.digest
    except (AttributeError, LedgerInvalid):
        return False


def open_ledger(location: str, *, actor: str | None = None, read_only: bool = False) -> LedgerHandle:
    """Open a ledger and read it once; raises LedgerInvalid (file:line:col) if it is bad."""
    handle = LedgerHandle(location, actor=actor, read_only=read_only)
    handle.load()
    return handle


__all__ = [
    "ApprovalChanged", "BASE_STATES", "Conflict", "HandoffError", "InvariantStatus", "Ledger", "LedgerBroken",
    "LedgerChanged", "LedgerHandle", "LedgerInvalid", "PendingCommand", "ReadOnly", "Refused", "SUMMARY_ORDER",
    "Snapshot", "Target", "UsageError", "age_text", "load_user_state", "one_line", "open_ledger", "save_user_state",
    "visible",
]
