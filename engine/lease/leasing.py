"""Taking, keeping and giving back the lease (`session:` in the ledger) through the store.

The same for every kind of holder (engine.lease.rules): the decision is made inside one
store transaction, so two holders starting in the same instant cannot both win, and
the new holder's first heartbeat is written under the same lock, before its lease is
visible. A holder that finds the lock held too long before it holds the lease is told
so as "lease held" (exit 5): somebody else is busy with the ledger.
"""

from __future__ import annotations

import os

from engine.codec.timefmt import now_iso
from engine.errors import LeaseHeld
from engine.host.procs import process_start_time
from engine.lease.binding import not_the_holder, session_bind
from engine.lease.rules import LeaseState, lease_state, where_pids_count
from engine.ledger.model import Ledger, SessionLease
from engine.store.filelock import LockTimeout


def session_lease(holder_id: str, *, user: str, planner: str | None, runtime: str = "session",
                  with_pid: bool = True, **extra) -> SessionLease:
    """A lease for this process (`with_pid`: a long-lived one, whose pid can be checked)."""
    where = where_pids_count()
    pid = os.getpid() if with_pid else None
    return SessionLease(
        id=holder_id, runtime=runtime, host=where["host"], pid=pid,
        pid_start=process_start_time(pid) if pid else None,
        boot_id=where["boot_id"] if pid else None, pid_ns=where["pid_ns"] if pid else None,
        user=user, started_at=now_iso(), planner=planner, **extra,
    )


def claude_code_lease(session_id: str, *, user: str) -> SessionLease:
    """The lease of a Claude Code session: its session id, no pid (hook processes come and
    go; the heartbeat every hook call and `handoff run` writes is its proof of life),
    bound to this user's secret for that id (engine.lease.binding)."""
    return session_lease(session_id, user=user, planner="claude-code", runtime="claude-code", with_pid=False,
                         bind=session_bind(session_id, create=True))


def acquire(store, location: str, lease: SessionLease, *, phase: str = "starting") -> tuple[LeaseState, int]:
    """Write `lease` (after its first heartbeat); returns (what the previous lease was, revision).

    A live lease of another holder raises LeaseHeld (exit 5); the holder's own lease is
    simply renewed (a Claude Code session comes back on every hook call)."""
    heartbeat = store.heartbeat()

    def take(ledger: Ledger) -> LeaseState:
        state = lease_state(ledger.session, heartbeat.current())
        if state.status == "live" and ledger.session is not None and ledger.session.id != lease.id:
            raise LeaseHeld(
                f"another session drives this ledger: {state.detail}. "
                f"Stop it with `handoff stop {location}`, or wait for it to hand off",
            )
        impostor = not_the_holder(ledger.session, lease) if state.status == "live" else None
        if impostor:  # the same id, presented by something that is not its holder
            raise LeaseHeld(
                f"this process presents the id of the live session that drives this ledger ({state.detail}), "
                f"but {impostor}: a session id is not a credential. Stop that session with `handoff stop {location}`, "
                "or wait for it to hand off",
            )
        heartbeat.write(lease.id, phase=phase)
        if ledger.session is not None and ledger.session.id == lease.id:
            # Renewing our own lease keeps a stop request someone made meanwhile.
            lease.stop_requested = ledger.session.stop_requested
            lease.stop_requested_by = ledger.session.stop_requested_by
        ledger.session = lease
        return state

    try:
        return store.transact(take)
    except LockTimeout as err:
        raise LeaseHeld(f"cannot take the lease: {err.message}") from None


def release(store, holder_id: str) -> int | None:
    """Clear our lease (never someone else's) and our heartbeat; the revision, or None if not ours."""
    heartbeat = store.heartbeat()

    class _NotOurs(Exception):
        pass

    def drop(ledger: Ledger) -> None:
        if ledger.session is None or ledger.session.id != holder_id:
            raise _NotOurs()
        ledger.session = None
        beat = heartbeat.current()
        if beat is not None and beat.get("session") == holder_id:
            heartbeat.remove()

    try:
        return store.transact(drop)[1]
    except _NotOurs:
        return None
