"""Talking to a Temporal server about a ledger's workflow: start or attach, follow, wake.

`handoff resume --runtime temporal` starts the ledger's workflow (id `handoff-<ledger id>`)
or, when one runs, attaches to it: a second start, from any host, never runs a second
workflow. `--follow` prints the journal's lines as the workflow writes them and exits with
its code. `wake` is what `handoff approve` (and every other write) does afterwards: a
`poke` signal, so the workflow looks again within a second. `ended` asks the server whether
the workflow ended without handing off (terminated, cancelled, timed out, failed), for
`handoff status`, the TUI header, `approve`'s message and the lease keeper.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
from datetime import UTC
from typing import Any, TextIO

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistoryEventFilterType,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from engine.codec.jsontext import json_line
from engine.errors import HandoffError
from engine.temporal.names import HANDED_OFF, WORKFLOW, poll_seconds, server_flags, worker_command

CONNECT_TIMEOUT = 5.0
QUIET = {"metric", "step_end"}  # journal-only records: a session does not print them either (engine.session.out)


class ServerUnavailable(HandoffError):
    title = "Temporal unavailable"
    exit_code = 6


async def connect(address: str, namespace: str) -> Client:
    """A client of `address`; ServerUnavailable (exit 6) naming it if it does not answer."""
    try:
        return await asyncio.wait_for(Client.connect(address, namespace=namespace), CONNECT_TIMEOUT)
    except (TimeoutError, RuntimeError, OSError) as err:
        raise ServerUnavailable(f"cannot reach the Temporal server at {address} (namespace {namespace}): "
                                f"{err or 'no answer within 5 s'}; start it, or name it with --temporal HOST:PORT") from None


async def start_or_attach(client: Client, job: dict[str, Any], memo: dict[str, str] | None = None) -> tuple[WorkflowHandle, bool]:
    """(handle, True) when this call started the workflow; (handle, False) when one ran.
    `memo` (the ledger, its id and task) is what `temporal workflow describe` shows of it:
    custom search attributes would need the server set up for them, a memo needs nothing."""
    try:
        handle = await client.start_workflow(
            WORKFLOW, job, id=job["workflow_id"], task_queue=job["task_queue"], memo=memo or None,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL, id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        return handle, True
    except WorkflowAlreadyStartedError:
        return client.get_workflow_handle(job["workflow_id"]), False


async def follow(handle: WorkflowHandle, journal, offset: int, *, json_mode: bool, stream: TextIO | None = None) -> int:
    """Print the journal's new records until the workflow ends; its exit code. A terminal
    gone without a hang-up (or a closed pipe) ends the follower with 0, at the next record or
    while nothing comes, as `handoff journal --follow` ends: the workflow goes on."""
    from engine.audit.lines import format_record
    from engine.host.console import gone, say

    stream = stream or sys.stdout
    result: dict[str, Any] = {}
    done = threading.Event()

    async def wait() -> None:
        try:
            result.update(await handle.result())
        except WorkflowFailureError as err:
            result.update(code=1, ending=f"the workflow failed: {err.cause or err}")
        finally:
            done.set()

    waiter = asyncio.create_task(wait())
    while True:
        ended = done.is_set()
        records, offset = await asyncio.to_thread(journal.read, offset)
        for record in records:
            if not json_mode and record.get("kind") in QUIET:
                continue
            if not say(json_line(record) if json_mode else format_record(record), stream):
                waiter.cancel()
                return 0
        if ended:
            break
        if gone(stream):  # nobody left to read, and nothing new came
            waiter.cancel()
            return 0
        await asyncio.sleep(0.3)
    await waiter
    return int(result.get("code", 1))


def in_loop(coro):
    """`asyncio.run(coro)`, then the SDK's clients collected at once: one the interpreter
    finalizes at exit can crash the process (seen here: SIGSEGV, and SIGABRT in
    PyGILState_Release, in about 5% of exits). The collection reaches everything: what the
    process's first ledger read froze (engine.store.bulk) is unfrozen for it, a worker's or a
    `resume`'s SDK objects among it, and what is still alive is frozen again afterwards, so
    a TUI asking the server keeps its start-up out of later collections."""
    try:
        return asyncio.run(coro)
    finally:
        frozen = gc.get_freeze_count() > 0
        gc.unfreeze()
        gc.collect()
        if frozen:
            gc.freeze()


ENDED = {WorkflowExecutionStatus.TERMINATED: "terminated", WorkflowExecutionStatus.CANCELED: "cancelled",
         WorkflowExecutionStatus.TIMED_OUT: "timed out", WorkflowExecutionStatus.FAILED: "failed"}
ASK_TIMEOUT = 2.0  # status and the TUI header wait this long for the server, no longer
SILENT_TTL = 30.0  # a server that did not answer is not asked again for this long (the TUI would stall)
_asked: dict[str, tuple[float, bool, str | None]] = {}  # workflow id -> (when, answered, what the server said)


async def ended(client: Client, workflow_id: str) -> str | None:
    """`temporal workflow handoff-... ended: terminated at T (why)` when the workflow's latest
    run ended without handing off; None while it runs or when it completed."""
    handle = client.get_workflow_handle(workflow_id)
    info = await handle.describe()
    how = ENDED.get(info.status) if info.status is not None else None
    if how is None:
        return None
    why = ""
    async for event in handle.fetch_history_events(event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT):
        for field in ("workflow_execution_terminated_event_attributes", "workflow_execution_failed_event_attributes",
                      "workflow_execution_canceled_event_attributes"):
            if event.HasField(field):
                attrs = getattr(event, field)
                why = getattr(attrs, "reason", "") or (attrs.failure.message if field.endswith("failed_event_attributes") else "")
    at = info.close_time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if info.close_time else "an unknown time"
    return f"temporal workflow {workflow_id} ended: {how} at {at}" + (f" ({why.strip()})" if why.strip() else "")


def _in_thread(coro_fn, wait: float):
    """Run `coro_fn()` in its own loop on a thread for at most `wait` s: (done, result or error)."""
    box: list = []

    def run() -> None:
        try:
            box.append((True, in_loop(coro_fn())))
        except Exception as err:  # noqa: BLE001 - the caller says what failed
            box.append((False, err))

    thread = threading.Thread(target=run, name="temporal-ask", daemon=True)
    thread.start()
    thread.join(wait)
    return box[0] if box else (False, TimeoutError(f"no answer within {wait:g} s"))


def ended_text(ref, wait: float | None = None, ttl: float = 10.0) -> tuple[bool, str | None]:
    """(answered, ended text or None) for a lease's `temporal` reference; a late beat makes
    status and the TUI ask, at most once per `ttl` seconds per workflow, waiting `wait`
    seconds at most (default ASK_TIMEOUT, read at each call)."""
    now = time.monotonic()
    cached = _asked.get(ref.workflow_id)
    if cached is not None and now - cached[0] < (ttl if cached[1] else SILENT_TTL):
        return cached[1], cached[2]

    async def ask() -> str | None:
        client = await connect(ref.address, ref.namespace)
        try:
            return await ended(client, ref.workflow_id)
        finally:
            del client

    ok, result = _in_thread(ask, ASK_TIMEOUT if wait is None else wait)
    _asked[ref.workflow_id] = (now, ok, result if ok else None)
    return (True, result) if ok else (False, None)


def resume_hint(ref, ledger: str | None) -> str:
    """The command that starts the ledger's workflow again."""
    return f"`handoff resume --ledger {ledger or 'LEDGER'} --runtime temporal {server_flags(ref)}`"


def wake(ref, wait: float = 5.0, ledger: str | None = None, silent: float | None = None) -> str:
    """Signal the workflow in a lease's `temporal` reference to look at the ledger now.
    Returns what to tell the person (never raises: the write is already done). `silent`:
    how long its lease keeper has not beaten, when that is late (no worker runs it: the
    server takes the signal, nothing looks until a worker polls the task queue)."""

    async def poke() -> str | None:
        client = await connect(ref.address, ref.namespace)
        try:
            gone = await ended(client, ref.workflow_id)
            if gone is None:
                handle = client.get_workflow_handle(ref.workflow_id)
                try:
                    await handle.signal("poke")
                except RPCError:
                    # It closed between the question and the signal: say how, or that it handed off.
                    if (await handle.describe()).status != WorkflowExecutionStatus.COMPLETED:
                        raise
                    return await ended(client, ref.workflow_id) or HANDED_OFF
            return gone
        finally:
            del client

    later = (f"its lease keeper re-reads the ledger every {poll_seconds():g} s once the server answers, "
             f"if the workflow still runs (`handoff status` says whether it does)")
    ok, result = _in_thread(poke, wait)
    if ok and result is None and silent is not None:
        return (f"no worker runs temporal workflow {ref.workflow_id} now (its lease keeper last beat {silent:.0f} s ago); "
                f"the server took the signal, but nothing acts on this until a worker polls its task queue: {worker_command(ref)}")
    if ok and result is None:
        return f"signalled temporal workflow {ref.workflow_id}: it looks again within a second"
    if ok and result == HANDED_OFF:
        return f"temporal workflow {ref.workflow_id} {HANDED_OFF}; its handoff note says where it stopped"
    if ok:
        return f"{result}; no workflow will act on this until someone runs {resume_hint(ref, ledger)}"
    err = result
    why = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"could not signal temporal workflow {ref.workflow_id} ({why}); {later}"
