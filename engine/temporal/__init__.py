"""The Temporal runtime: the same ledger, driven by a Temporal workflow across many workers.

One core, two runtimes. The workflow (`workflow.py`) is a thin deterministic shell: it
holds names, steps and decisions, never the ledger. Everything that reads or writes the
ledger runs in activities (`activities.py`) that call the single-step decision core
every other holder uses (`core.py` over engine.session.actor): the guard, the gates, the
write-ahead intent and the fenced step runner. The workflow holds the ledger's lease as
a third kind of holder (engine.lease): `runtime: temporal`, its id the workflow id.

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


def wake_workflow(lease) -> str | None:
    """After a write to a ledger a Temporal workflow holds: signal it to look now. What to
    tell the person, or None when no workflow holds the ledger."""
    if lease is None or lease.runtime != "temporal" or lease.temporal is None:
        return None
    try:
        from engine.temporal.client import wake
    except ImportError:
        return f"the workflow will see it within 30 s (the temporalio SDK is not installed here to signal it: {INSTALL})"
    return wake(lease.temporal)
