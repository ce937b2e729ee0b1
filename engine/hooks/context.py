"""What every hook call shares: Claude Code's input, the ledger, the session's lease.

A Claude Code session holds the lease under its `session_id` (also in
CLAUDE_CODE_SESSION_ID for every hook and Bash-tool command); hook processes come and
go, so the lease records no pid, and every hook call refreshes its heartbeat. A lease
that went stale while the session was idle is taken again by its next hook call, if
nobody else took it meanwhile.

A hook runs on every tool call, so a call pays only for what it uses: for a ledger
file whose exact bytes have stored facts (engine.hooks.facts), the call reads those
and never imports pydantic, the store or the model; the whole validated ledger
(`ledger`), the store and the journal (`writer`) are opened at their first use, and a
journal record alone (post-tool-use) goes through `journal`, opened beside the ledger
with the `redact:` patterns of the facts, without the store. With no
facts for the current bytes (a hand edit, a first call, a database ledger) the ledger
is read in full at once, as before: a bad ledger fails the call closed here.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from engine.approvals.identity import os_user
from engine.hooks import facts
from engine.hooks.facts import HookFacts
from engine.lease.binding import holds_here

if TYPE_CHECKING:
    from engine.lease.rules import LeaseState
    from engine.ledger.access import Writer
    from engine.ledger.model import Ledger
    from engine.store.base import Journal

SESSION_VAR = "CLAUDE_CODE_SESSION_ID"


class HookContext:
    """One hook call: its input, the ledger as it is now, and who holds the lease."""

    def __init__(self, event: str, ledger_path: str, data: dict[str, Any]) -> None:
        self.event = event
        self.ledger_path = ledger_path
        self.data = data
        self.session_id = str(data.get("session_id") or os.environ.get(SESSION_VAR) or "")
        self._writer: Writer | None = None
        self._journal: Journal | None = None  # opened without the writer (`journal`)
        self._ledger: Ledger | None = None
        self._facts: HookFacts | None = facts.load(ledger_path) if self._is_file() else None
        self._read_digest = ""
        if self._facts is None:
            self.ledger  # noqa: B018 - no facts of these bytes: read now (a bad ledger fails the call closed here)
        self.identity = f"agent:{self.session_id}" if self.session_id else "agent:claude-code"
        self.holder: LeaseState | None = None  # someone else's live lease, when there is one

    @property
    def writer(self) -> Writer:
        """The store, journal and read-only reason (engine.ledger.access), opened at the first use."""
        if self._writer is None:
            from engine.ledger.access import open_writer

            self._writer = open_writer(self.ledger_path)
        return self._writer

    @property
    def store(self) -> Any:
        return self.writer.store

    @property
    def read_only(self) -> bool:
        """Whether this user cannot change the ledger (asked without opening the store)."""
        if self._writer is not None or not self._is_file():
            return self.writer.read_only
        from engine.ledger.access import writable_reason

        return writable_reason(self.ledger_path) is not None

    @property
    def ledger_dir(self) -> str:
        """Where `{ledger_dir}` points: the writer's, or for a file what engine.ledger.ops.ledger_dir
        says (its folder), without importing engine.ledger.ops and the model."""
        if self._writer is not None or not self._is_file():
            return self.writer.ledger_dir
        return os.path.dirname(os.path.realpath(self.ledger_path))

    @property
    def ledger(self) -> Ledger:
        """The whole validated ledger, read at the first use. Its hook facts
        (engine.hooks.facts) are kept for the next call when they were not there yet."""
        if self._ledger is None:
            snap = self.store.snapshot()
            self._ledger = snap.ledger
            if self._is_file():
                known = self._facts.key if self._facts is not None else facts.stored_key(self.ledger_path)
                if known != snap.digest:
                    facts.remember(self.ledger_path, snap.digest, snap.ledger)
            self._facts = None  # made from what was read, if asked for
            self._read_digest = snap.digest
        return self._ledger

    @ledger.setter
    def ledger(self, value: Ledger) -> None:
        self._ledger, self._facts, self._read_digest = value, None, ""

    @property
    def facts(self) -> HookFacts:
        """States, steps, pause, agent policy, lease and `redact:` patterns of the ledger as it is now: from the
        per-user cache when they were made from these very bytes, else from the whole read."""
        if self._facts is None and self._is_file():
            self._facts = facts.load(self.ledger_path)
        if self._facts is None:
            self._facts = facts.build(self._read_digest, facts.of_ledger(self.ledger))
        return self._facts

    def drop_facts(self) -> None:
        """The stored facts proved bad (their target states do not decode): forget them; the
        whole read that `facts` then makes stores new ones."""
        facts.forget(self.ledger_path)
        self._facts = None

    def _is_file(self) -> bool:
        return not self.ledger_path.startswith(("postgresql://", "postgres://"))

    @property
    def journal(self) -> Journal:
        """The ledger's journal, redacting with the ledger's `redact:` patterns: the writer's,
        or for a file with facts of its bytes, the same journal opened beside it with the
        patterns of those facts, without the store or the model (post-tool-use, on every
        tool call, writes one record)."""
        if self._writer is not None or not self._is_file():
            return self.writer.journal
        if self._journal is None:
            from engine.audit.journal import Journal, journal_path

            self._journal = Journal(journal_path(self.ledger_path), ledger=self.ledger_path, read_only=self.read_only)
            self._journal.set_redact(list(self.facts.redact))
        return self._journal

    def say(self, kind: str, msg: str, **fields: Any) -> None:
        """One journal record (redacted by the journal), from this Claude Code session."""
        if self.read_only:
            return
        self.journal.append(kind, msg, actor=self.identity, session=self.session_id or None, user=os_user(), **fields)

    def _heartbeat(self) -> Any:
        if self._writer is not None or not self._is_file():
            return self.store.heartbeat()
        from engine.lease.heartbeat import Heartbeat

        # What FileStore.heartbeat opens (the `<ledger>.heartbeat` sidecar), without the store.
        real = os.path.realpath(self.ledger_path)
        return Heartbeat(real + ".heartbeat", real)

    def touch_lease(self) -> LeaseState | None:
        """Refresh this session's lease (or take it, when it is free or stale); returns the
        state of someone else's live lease, or None when this session holds it."""
        if self.read_only or not self.session_id:
            return None
        known = self.facts.session if self._ledger is None else None
        held = SimpleNamespace(**known) if known is not None else None
        if held is not None and holds_here(held, self.session_id):  # the id alone is no proof (engine.lease.binding)
            self._heartbeat().write(self.session_id, phase=f"claude code: {self.event}")
            return None
        from engine.errors import LeaseHeld
        from engine.lease import leasing
        from engine.lease.rules import LeaseState, lease_state

        lease = self.ledger.session
        heartbeat = self.store.heartbeat()
        if holds_here(lease, self.session_id):
            heartbeat.write(self.session_id, phase=f"claude code: {self.event}")
            return None
        state = lease_state(lease, heartbeat.current())
        if state.status == "live":
            self.holder = state
            return state
        try:
            _previous, taken = leasing.acquire(self.store, self.ledger_path, leasing.claude_code_lease(self.session_id, user=os_user()),
                                               phase=f"claude code: {self.event}")
        except LeaseHeld as err:  # taken in the same instant by someone else
            self.holder = LeaseState("live", "another holder", err.message, None)
            return self.holder
        self._ledger = None  # changed by taking the lease: read again (its facts kept) at the next use
        self.say("lease_take", f"Claude Code session {self.session_id} holds the lease"
                 + (f" (took it over: {state.detail})" if state.status in ("dead", "stale") else ""), rev=taken)
        return None
