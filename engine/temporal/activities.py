"""The workflow's activities: engine.temporal.core's work, run in a thread while the
activity heartbeats to Temporal (a worker that stops heartbeating is taken for dead and
its activity given to another; the fences in core make a late one harmless)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.exceptions import ApplicationError

from engine.temporal import core

_every = core.beat_every


async def _in_thread(job: core.Job, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a worker thread, heartbeating until it returns (a local activity, the
    decision, has no heartbeat: its workflow task is what the server watches)."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    local = activity.info().is_local
    while True:
        done, _ = await asyncio.wait({task}, timeout=_every(job))
        if done:
            return task.result()
        if not local:
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


@activity.defn(name="planner_note")
async def planner_note(job: core.Job, memo: dict, why: str, note: str | None, started_at: str) -> str:
    return await _in_thread(job, core.planner_note, job, memo, why, note, started_at)


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
async def finish(job: core.Job, ending: str, code: int, note: str | None, started_at: str, memo: dict | None = None) -> dict | None:
    return await _in_thread(job, core.finish, job, ending, code, note, started_at, memo)


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
    """Keep the ledger's heartbeat while the workflow runs (it waits on approvals for days),
    and poke the workflow when a re-read every `poll` s finds the ledger changed; returns
    why the workflow lost the lease. Cancelled when the run ends; cancelled because the
    workflow is gone from the server (terminated, timed out...), it journals that and pages."""
    keeper = await asyncio.to_thread(core.Keeper, job)
    counted = looked = -1e9
    loop = asyncio.get_running_loop()
    try:
        while True:
            if loop.time() - counted >= 10.0:
                keeper.workers, counted = await _workers(job), loop.time()
            lost = await asyncio.to_thread(keeper.once)
            if lost:
                return lost
            if loop.time() - looked >= float(job["poll"]):
                looked = loop.time()
                if await asyncio.to_thread(keeper.changed):
                    await _poke()
            activity.heartbeat()
            await asyncio.sleep(_every(job))
    except asyncio.CancelledError:
        details = activity.cancellation_details()
        if details is None or not details.cancel_requested:  # not the workflow's own cancel: is it gone?
            await _gone(job)
        raise


async def _poke() -> None:
    try:
        workflow_id = activity.info().workflow_id
        if workflow_id is None:  # an activity started on its own: no workflow to wake
            return
        await activity.client().get_workflow_handle(workflow_id).signal("poke")
    except Exception as err:  # noqa: BLE001 - the idle timer still wakes it; say why in the worker's log
        activity.logger.warning(f"could not poke the workflow after a ledger change: {err}")


async def _gone(job: core.Job) -> None:
    """Journal and page when the server says the workflow ended without handing off."""
    from engine.temporal.client import ended

    try:
        text = await asyncio.wait_for(ended(activity.client(), job["workflow_id"]), 10)
    except Exception as err:  # noqa: BLE001 - status asks the server itself; the worker's log says why not here
        activity.logger.warning(f"could not ask the server whether the workflow ended: {err}")
        return
    if text:
        await asyncio.to_thread(core.workflow_gone, job, text)


ALL: list[Callable[..., Any]] = [take_lease, keep_lease, verify, decide, planner_note, run_step, in_flight, settle, finish]
SETTLE_HERE: list[Callable[..., Any]] = [settle]  # what a worker serves on its own host's queue
