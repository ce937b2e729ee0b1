"""The LangGraph runtime: a ledger driven by a LangGraph graph with the PostgreSQL checkpointer.

LangGraph is used for what it is good at, a durable graph of decisions; it is never an
authority. The ledger stays the only memory and the engine's approval and fence the only
authority: a node reads the ledger afresh every time it runs and only ever calls the
single-step decision core every holder shares (engine.session.actor: guard, gates,
write-ahead intent, fenced spawn, record). So a replay from an old checkpoint, an
`update_state` fork, a resume value that claims an approval, or code re-run before an
`interrupt()` can never start a step twice (tests/integration/test_langgraph_hazards.py).

The graph (graph.py) is a plan node that fans out to one node per target, at most the
ledger's concurrency at once, and an interrupt per irreversible edge; nodes.py holds what
the nodes do to the ledger, planning.py the Claude planner as the plan node, runtime.py
the process that runs the thread, checkpoints.py retention, outage.py the checkpointer's
database going away (ridden out, then exit 6).

`langgraph` is optional (`pip install 'handoff-tui[langgraph]'`): only `graph.py`,
`checkpoints.py`, `outage.py` and `runtime.py` import it, and nothing imports them unless
`handoff resume --runtime langgraph` asks (tests/integration/test_langgraph_imports.py).
"""

from __future__ import annotations

from engine.errors import UsageError

INSTALL = "pip install 'handoff-tui[langgraph]'"


def require() -> None:
    """Raise UsageError (exit 2) naming the install command if langgraph is missing."""
    try:
        import langgraph.checkpoint.postgres  # noqa: F401 - only asked whether it is there
    except ImportError:
        raise UsageError(f"the LangGraph runtime needs langgraph and its PostgreSQL checkpointer, which are not "
                         f"installed: {INSTALL}", title="LangGraph not installed") from None


def thread_id(ledger_id: str) -> str:
    """The graph thread of a ledger, one per ledger id (every run of it resumes the same thread)."""
    return f"handoff-{ledger_id}"


def holder_id(thread: str) -> str:
    """One run's id as the lease holder: its thread and a part of this process's own. Two runs
    of one thread (one frozen, its stale lease taken over by the next) must be told apart by
    every check that asks "do I still hold the ledger?" (the heartbeat, the fence, the hand-off)."""
    import uuid

    return f"{thread}/{uuid.uuid4().hex[:8]}"


def wake_hint(lease, state) -> str | None:
    """After a write to a ledger a LangGraph runtime holds: what to tell the person. A live
    runtime watches the ledger and resumes its thread itself (the resume only wakes; the
    node reads the approval from the ledger), so there is nothing to signal. A runtime whose
    lease is dead or stale (killed, frozen) resumes nothing: that is said, and what to run.
    `state`: the lease's (engine.lease.rules.lease_state)."""
    if lease is None or lease.runtime != "langgraph":
        return None
    thread = lease.id.split("/")[0]
    if state.status != "live":  # nobody watches the ledger: the approval waits until a runtime runs again
        return (f"no LangGraph runtime runs thread {thread} now ({state.detail}): nothing resumes it until "
                "`handoff resume --runtime langgraph` runs again; the change waits in the ledger")
    return (f"the LangGraph runtime resumes thread {thread} when it sees this change "
            "(it reads the approval from the ledger, never from the resume)")
