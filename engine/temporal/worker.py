"""`handoff worker`: a Temporal worker for every ledger it can reach.

It polls the shared task queue (the workflow and all its activities) and a queue of
its own host, `<queue>@<host>`, where the workflow settles a step whose process may
still run here. A file ledger needs all its workers on one host (file locks over a
network filesystem are not trustworthy); workers on several hosts use a PostgreSQL
ledger. SIGTERM or Ctrl-C stops it after its running activities are given up; a step
it was running is settled by the workflow like one whose worker died. So does SIGHUP
(the terminal it was started in hung up: an SSH connection dropped), unless it is
ignored (nohup); what it says on a terminal that has gone is dropped, never an error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
from datetime import timedelta

from temporalio.worker import Worker

from engine.approvals.identity import hostname
from engine.approvals.people import AGENT_VAR
from engine.host import console
from engine.temporal import activities
from engine.temporal.client import connect
from engine.temporal.names import host_queue
from engine.temporal.workflow import LedgerWorkflow


async def serve(address: str, namespace: str, queue: str, max_concurrent: int, *, say=console.say) -> int:
    client = await connect(address, namespace)
    host = hostname()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stopped_by: list[str] = []

    def stop_on(sig: signal.Signals) -> None:
        stopped_by.append(sig.name)
        stop.set()

    for sig in console.stop_signals():
        loop.add_signal_handler(sig, stop_on, sig)
    # The activities run the engine in threads (asyncio.to_thread): enough of them for
    # every step at once, the lease keepers and the settles.
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=max_concurrent + 8))
    me = f"handoff-worker@{host}:{os.getpid()}"
    os.environ[AGENT_VAR] = me  # the worker and every child it starts run for an agent (engine.approvals.people)
    shared = Worker(client, task_queue=queue, workflows=[LedgerWorkflow], activities=activities.ALL,
                    max_concurrent_activities=max_concurrent, identity=me,
                    # Steps go to whichever worker polls first, not all to the one whose
                    # workflow task scheduled them: the point of many workers.
                    disable_eager_activity_execution=True,
                    # A worker killed while it holds a workflow in its cache delays that
                    # workflow's next decision by this much, not Temporal's default 10 s.
                    sticky_queue_schedule_to_start_timeout=timedelta(seconds=3))
    local = Worker(client, task_queue=host_queue(queue, host), activities=activities.SETTLE_HERE, identity=f"{me}/host")
    async with shared, local:
        say(f"handoff worker on {host}: task queues {queue} and {host_queue(queue, host)} at {address} "
            f"(namespace {namespace}), at most {max_concurrent} activities at once (steps, lease keepers, decisions)")
        await stop.wait()
    say(f"handoff worker stopped ({stopped_by[0]} received)")
    return 0
