"""Names and settings the Temporal runtime shares with the commands (no temporalio import).

- the workflow id of a ledger: `handoff-<ledger id>`, where the ledger id is the UUID the
  first start writes into the ledger's top-level `id`;
- each worker polls the shared task queue and one of its own host, `<queue>@<host>`, so
  the workflow can settle a step on the host whose process may still run;
- durations from the environment (engine.settings): how often the lease keeper re-reads
  the ledger for edits made outside the engine and wakes the workflow when it changed
  (HANDOFF_TEMPORAL_POLL, 30 s); the workflow's own timer when nothing wakes it
  (HANDOFF_TEMPORAL_IDLE, 10 min: a timer costs history, a keeper's read does not); after
  how long without an activity heartbeat a worker is taken for dead
  (HANDOFF_TEMPORAL_HEARTBEAT_TIMEOUT, 20 s);
- the history length at which a run continues as new (HANDOFF_TEMPORAL_HISTORY_MAX, 4,000
  events: well below Temporal's warning at 10,240 and its hard limit at 51,200).
"""

from __future__ import annotations

from engine.settings import seconds

WORKFLOW = "handoff-ledger"
DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"
DEFAULT_QUEUE = "handoff"


def workflow_id(ledger_id: str) -> str:
    return f"handoff-{ledger_id}"


def host_queue(queue: str, host: str) -> str:
    """The task queue only the workers on `host` poll."""
    return f"{queue}@{host}"


def server_flags(ref) -> str:
    """`--temporal ADDRESS [--namespace NS] --task-queue Q` of a lease's `temporal` reference."""
    return (f"--temporal {ref.address}" + (f" --namespace {ref.namespace}" if ref.namespace != DEFAULT_NAMESPACE else "")
            + f" --task-queue {ref.task_queue}")


def worker_command(ref) -> str:
    """The command that starts a worker for the workflow of a lease's `temporal` reference."""
    return f"`handoff worker {server_flags(ref)}`"


def poll_seconds() -> float:
    return seconds("HANDOFF_TEMPORAL_POLL")


def heartbeat_timeout() -> float:
    return seconds("HANDOFF_TEMPORAL_HEARTBEAT_TIMEOUT")


def idle_seconds() -> float:
    return seconds("HANDOFF_TEMPORAL_IDLE")


def history_max() -> int:
    """Events after which a run continues as new (at least 100: a run must get some work done)."""
    return max(100, int(seconds("HANDOFF_TEMPORAL_HISTORY_MAX")))


def planner_backoff() -> float:
    """The first wait after a model outage (HANDOFF_TEMPORAL_PLANNER_BACKOFF, 5 s; doubling, at most 5 min)."""
    return seconds("HANDOFF_TEMPORAL_PLANNER_BACKOFF")


# What waking a workflow says when it completed (handed off) before the signal reached it.
HANDED_OFF = "completed before the signal reached it: it had handed off"
