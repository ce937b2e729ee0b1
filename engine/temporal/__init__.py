"""The Temporal runtime: the same ledger, driven by a Temporal workflow across many workers.

One core, two runtimes. The workflow (`workflow.py`) is a thin deterministic shell: it
holds names, steps and decisions, never the ledger. Everything that reads or writes the
ledger runs in activities (`activities.py`) that call the single-step decision core
every other holder uses (`core.py` over engine.session.actor): the guard, the gates, the
write-ahead intent and the fenced step runner. The workflow holds the ledger's lease as
a third kind of holder (engine.lease.rules): `runtime: temporal`, its id the workflow id.

`temporalio` is optional (`pip install 'handoff-tui[temporal]'`): only `activities.py`,
`workflow.py`, `client.py` and `worker.py` import it, and nothing imports them unless a
command asks for Temporal or the lease says `runtime: temporal` (tests/unit/test_import_hygiene.py).
"""

from __future__ import annotations

from engine.errors import UsageError

INSTALL = "pip install 'handoff-tui[temporal]'"


def require() -> None:
    """Raise UsageError (exit 2) naming the install command if temporalio is missing."""
    try:
        import temporalio
    except ImportError:
        raise UsageError(f"the Temporal runtime needs the temporalio SDK, which is not installed: {INSTALL}",
                         title="Temporal not installed") from None
    del temporalio  # only asked whether it is there


def wake_workflow(lease, state, ledger: str | None = None) -> str | None:
    """After a write to a ledger a Temporal workflow holds: signal it to look now. What to
    tell the person (a workflow that ended says so, and what to run; one whose lease keeper
    has stopped beating, `state` the lease's, runs on no worker: that is said, and what to
    start), or None when no workflow holds the ledger."""
    if lease is None or lease.runtime != "temporal" or lease.temporal is None:
        return None
    try:
        from engine.temporal.client import wake
    except ImportError:
        return ("the temporalio SDK is not installed here to signal the workflow; its lease keeper re-reads the ledger "
                f"every HANDOFF_TEMPORAL_POLL seconds (30 s) if it still runs ({INSTALL})")
    silent = state.heartbeat_age if state.heartbeat_age is not None and state.heartbeat_age >= _late(state) else None
    return wake(lease.temporal, ledger=ledger, silent=silent)


BEAT_LATE = 4  # beats missed (the keeper writes how often it beats, 2 s at most) before status asks the server


def _late(state) -> float:
    """Seconds without a beat after which the lease keeper is late: no worker keeps it now."""
    every = (state.beat or {}).get("every")
    return BEAT_LATE * (float(every) if isinstance(every, (int, float)) and 0 < every <= 2 else 2.0)


def check_ended(lease, state):
    """The lease's state, corrected by the Temporal server when a workflow's beat is late:
    a workflow that ended without handing off is `dead`, its detail what the server says.

    Only a late beat asks (the healthy case never imports temporalio nor waits on the
    network), with a short timeout; a server that does not answer leaves the state as it is."""
    if lease is None or lease.runtime != "temporal" or lease.temporal is None or state.status not in ("live", "stale"):
        return state
    if state.status == "live" and state.heartbeat_age is not None and state.heartbeat_age < _late(state):
        return state
    try:
        from engine.temporal.client import ended_text
    except ImportError:
        return state
    answered, text = ended_text(lease.temporal)
    if not answered:
        state.detail += f" (the Temporal server at {lease.temporal.address} does not answer)"
        return state
    if text is None:  # it runs at the server, and its keeper is late: no worker runs it (its last beat's count is old)
        from engine.temporal.names import worker_command

        state.detail += f" (its lease keeper is late: no worker runs it now; start one: {worker_command(lease.temporal)})"
        return state
    from engine.lease.rules import LeaseState

    return LeaseState("dead", state.holder, text, state.heartbeat_age)
