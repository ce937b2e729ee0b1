"""The workflow's activities: engine.temporal.core's work, run in a thread while the
activity heartbeats to Temporal (a worker that stops heartbeating is taken for dead and
its activity given to another; the fences in core make a late one harmless)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.exceptions import ApplicationError

from engine.temporal import core


def _every(job: core.Job) -> float:
    """How often to heartbeat: well inside the heartbeat timeout."""
    return max(0.2, min(2.0, float(job.get("heartbeat_timeout", 20.0)) / 4))


async def _in_thread(job: core.Job, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a worker thread, heartbeating until it returns."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    while True:
        done, _ = await asyncio.wait({task}, timeout=_every(job))
        if done:
            return task.result()
        activity.heartbeat()


@activity.defn(name="take_lease")
async def take_lease(job: core.Job) -> dict:
    return await _in_thread(job, core.take_lease, job)


@activity.defn(name="verify")
async def verify(job: core.Job) -> dict:
    return await _in_thread(job, core.verify, job)


@activity.defn(name="decide")
async def decide(job: core.Job, running: list[str], memo: dict) -> dict:
    return await _in_thread(job, core.decide, job, running, memo)


@activity.defn(name="run_step")
async def run_step(job: core.Job, it: dict) -> dict:
    result = await _in_thread(job, core.run_step, job, it, activity.info().attempt)
    if "retry" in result:  # the failure is journaled; Temporal runs the next attempt (reversible steps only)
        raise ApplicationError(f"{it['target']}:{it['step']} failed: {result['retry']}", type="StepFailed")
    return result


@activity.defn(name="in_flight")
async def in_flight(job: core.Job, name: str) -> dict | None:
    return await _in_thread(job, core.in_flight, job, name)


@activity.defn(name="settle")
async def settle(job: core.Job, name: str, token: str | None) -> str:
    return await _in_thread(job, core.settle, job, name, token)


@activity.defn(name="finish")
async def finish(job: core.Job, ending: str, code: int, note: str | None, started_at: str) -> int | None:
    return await _in_thread(job, core.finish, job, ending, code, note, started_at)


async def _workers(job: core.Job) -> int | None:
    """How many workers poll the ledger's task queue now (None if the server will not say)."""
    try:
        reply = await activity.client().workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=job["namespace"], task_queue=TaskQueue(name=job["task_queue"]),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY))
    except Exception:  # noqa: BLE001 - a count for people to read; the lease does not depend on it
        return None
    return len({p.identity for p in reply.pollers})


@activity.defn(name="keep_lease")
async def keep_lease(job: core.Job) -> str:
    """Keep the ledger's heartbeat while the workflow runs (it waits on approvals for days);
    returns why the workflow lost the lease. Cancelled when the workflow ends."""
    keeper = await asyncio.to_thread(core.Keeper, job)
    counted = 0.0
    loop = asyncio.get_running_loop()
    while True:
        if loop.time() - counted >= 10.0:
            keeper.workers, counted = await _workers(job), loop.time()
        lost = await asyncio.to_thread(keeper.once)
        if lost:
            return lost
        activity.heartbeat()
        await asyncio.sleep(_every(job))


ALL = [take_lease, keep_lease, verify, decide, run_step, in_flight, settle, finish]
SETTLE_HERE = [settle]  # what a worker serves on its own host's queue
