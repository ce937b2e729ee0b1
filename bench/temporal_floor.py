"""The floor under a Temporal step: a bare workflow that runs N no-op activities one after
another, on the same dev server and SDK, dispatched as `handoff worker`'s steps are (eager
activity execution off: a step goes to whichever worker polls).
No engine, no ledger: what one activity's round trip through this server costs.

    python3 bench/temporal_floor.py worker ADDRESS QUEUE   # runs until SIGTERM
    python3 bench/temporal_floor.py run ADDRESS QUEUE N    # one workflow of N activities, then exits

bench/temporal_step.py starts the worker before the clock (as it does `handoff worker`)
and times `run` as a whole process, as it times `handoff resume --runtime temporal`.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker


@activity.defn(name="noop")
async def noop(i: int) -> int:
    return i


@workflow.defn(name="BareSteps")
class BareSteps:
    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_activity("noop", i, start_to_close_timeout=timedelta(seconds=60))
        return n


async def serve(address: str, queue: str) -> None:
    client = await Client.connect(address)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Worker(client, task_queue=queue, workflows=[BareSteps], activities=[noop],
                      disable_eager_activity_execution=True):  # as engine/temporal/worker.py
        await stop.wait()


async def run(address: str, queue: str, n: int) -> None:
    client = await Client.connect(address)
    done = await client.execute_workflow("BareSteps", n, id=f"bare-{uuid.uuid4().hex}", task_queue=queue)
    if done != n:
        raise SystemExit(f"bench: the bare workflow returned {done}, not {n}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"] and len(sys.argv) == 4:
        asyncio.run(serve(sys.argv[2], sys.argv[3]))
    elif sys.argv[1:2] == ["run"] and len(sys.argv) == 5:
        asyncio.run(run(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        raise SystemExit(__doc__)
