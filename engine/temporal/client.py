"""Talking to a Temporal server about a ledger's workflow: start or attach, follow, wake.

`handoff resume --runtime temporal` starts the ledger's workflow (id `handoff-<ledger id>`)
or, when one runs, attaches to it: a second start, from any host, never runs a second
workflow. `--follow` prints the journal's lines as the workflow writes them and exits with
its code. `wake` is what `handoff approve` (and every other write) does afterwards: a
`poke` signal, so the workflow looks again within a second.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
from typing import Any, TextIO

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from engine.errors import HandoffError
from engine.temporal.names import WORKFLOW

CONNECT_TIMEOUT = 5.0
QUIET = {"metric", "step_end"}  # journal-only records: a session does not print them either (engine.session.out)


class ServerUnavailable(HandoffError):
    title = "Temporal unavailable"
    exit_code = 6


async def connect(address: str, namespace: str) -> Client:
    """A client of `address`; ServerUnavailable (exit 6) naming it if it does not answer."""
    try:
        return await asyncio.wait_for(Client.connect(address, namespace=namespace), CONNECT_TIMEOUT)
    except (asyncio.TimeoutError, RuntimeError, OSError) as err:
        raise ServerUnavailable(f"cannot reach the Temporal server at {address} (namespace {namespace}): "
                                f"{err or 'no answer within 5 s'}; start it, or name it with --temporal HOST:PORT") from None


async def start_or_attach(client: Client, job: dict[str, Any]) -> tuple[WorkflowHandle, bool]:
    """(handle, True) when this call started the workflow; (handle, False) when one ran."""
    try:
        handle = await client.start_workflow(
            WORKFLOW, job, id=job["workflow_id"], task_queue=job["task_queue"],
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL, id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        return handle, True
    except WorkflowAlreadyStartedError:
        return client.get_workflow_handle(job["workflow_id"]), False


async def follow(handle: WorkflowHandle, journal, offset: int, *, json_mode: bool, stream: TextIO | None = None) -> int:
    """Print the journal's new records until the workflow ends; its exit code."""
    from engine.cli.commands import format_record

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
            print(json.dumps(record, ensure_ascii=False) if json_mode else format_record(record), file=stream, flush=True)
        if ended:
            break
        await asyncio.sleep(0.3)
    await waiter
    return int(result.get("code", 1))


def in_loop(coro):
    """`asyncio.run(coro)`, then the SDK's clients collected at once: one the interpreter
    finalizes at exit can crash the process (seen here: SIGSEGV in about 5% of exits)."""
    try:
        return asyncio.run(coro)
    finally:
        gc.collect()


def wake(ref, wait: float = 5.0) -> str:
    """Signal the workflow in a lease's `temporal` reference to look at the ledger now.
    Returns what to tell the person (never raises: the write is already done)."""
    said: list[str] = []

    async def poke() -> None:
        client = await connect(ref.address, ref.namespace)
        await client.get_workflow_handle(ref.workflow_id).signal("poke")
        del client

    def run() -> None:
        try:
            in_loop(poke())
            said.append(f"signalled temporal workflow {ref.workflow_id}: it looks again within a second")
        except Exception as err:  # noqa: BLE001 - any failure only delays the workflow
            said.append(f"could not signal temporal workflow {ref.workflow_id} ({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
                        "the workflow will see it within 30 s")

    thread = threading.Thread(target=run, name="temporal-wake", daemon=True)
    thread.start()
    thread.join(wait)
    return said[0] if said else f"the Temporal server did not answer within {wait:g} s; the workflow will see it within 30 s"

