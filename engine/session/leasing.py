"""Taking and giving back the session lease (`session:` in the ledger) through the store.

The decision (free, live, dead, stale) is `engine.session.lease.lease_state`; this
module applies it inside one store transaction, so two sessions started in the same
instant cannot both win: the second one's transaction sees the first one's lease.
"""

from __future__ import annotations

import os

from engine.errors import LeaseHeld
from engine.identity import hostname
from engine.model import Ledger, SessionLease
from engine.session.lease import LeaseState, lease_state
from engine.session.runner import process_start_time
from engine.timefmt import now_iso


def heartbeat_of(store):
    """Where the ledger's session beats: the store's own heartbeat (a sidecar file, or a
    table row for PostgreSQL), the same one `engine.api` reads."""
    return store.heartbeat()


def acquire(store, location: str, *, session_id: str, user: str, planner: str, now: float) -> tuple[LeaseState, int]:
    """Write our lease; returns (what the previous lease was, revision). Raises LeaseHeld (exit 5)."""
    host = hostname()

    def take(ledger: Ledger) -> LeaseState:
        beat = heartbeat_of(store).current()
        state = lease_state(ledger.session, beat, now=now, host=host)
        if state.status == "live":
            raise LeaseHeld(
                f"another session drives this ledger: {state.detail}. "
                f"Stop it with `handoff stop {location}`, or wait for it to hand off",
            )
        ledger.session = SessionLease(
            id=session_id,
            host=host,
            pid=os.getpid(),
            pid_start=process_start_time(os.getpid()),
            user=user,
            started_at=now_iso(now),
            planner=planner,
        )
        return state

    return store.transact(take)


def release(store, session_id: str) -> int | None:
    """Clear our lease (never someone else's); returns the revision, or None if not ours."""

    class _NotOurs(Exception):
        pass

    def drop(ledger: Ledger) -> None:
        if ledger.session is None or ledger.session.id != session_id:
            raise _NotOurs()
        ledger.session = None

    try:
        return store.transact(drop)[1]
    except _NotOurs:
        return None
