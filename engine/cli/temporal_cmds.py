"""The Temporal runtime's commands: `handoff worker`, and `handoff resume --runtime temporal`.

  handoff worker --temporal HOST:PORT [--namespace NS] [--task-queue Q] [--max-concurrent N]
  handoff resume --ledger L --runtime temporal --temporal HOST:PORT [--namespace NS]
                 [--task-queue Q] [--follow] [--planner claude [--model M] [--max-tokens N] [--handoff-at F]]

`resume --runtime temporal` exits 0 when it started or attached to the ledger's workflow
(with --follow: the workflow's own exit code, as a session's; 0 when the terminal it
prints to goes away, and the workflow goes on), 2 on usage or without the
`temporal` extra, 5 when another live holder (a session, a Claude Code session) has the
lease, 6 when the Temporal server does not answer.
"""

from __future__ import annotations

import os
import sys
import uuid

from engine.errors import LeaseHeld, UsageError
from engine.temporal import require
from engine.temporal.names import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_QUEUE,
    heartbeat_timeout,
    history_max,
    idle_seconds,
    planner_backoff,
    poll_seconds,
    workflow_id,
)


def add_server(p) -> None:
    p.add_argument("--temporal", metavar="HOST:PORT", default=None,
                   help=f"the Temporal frontend (default {DEFAULT_ADDRESS}; runtime temporal only)")
    p.add_argument("--namespace", metavar="NS", default=DEFAULT_NAMESPACE, help=f"the Temporal namespace (default {DEFAULT_NAMESPACE})")
    p.add_argument("--task-queue", metavar="Q", default=DEFAULT_QUEUE, help=f"the workers' task queue (default {DEFAULT_QUEUE})")


def register(sub) -> None:
    p = sub.add_parser("worker", help="run a Temporal worker that drives every ledger whose workflow it is given (needs the temporal extra)")
    add_server(p)
    p.add_argument("--max-concurrent", type=int, default=20, metavar="N",
                   help="at most this many activities at once: steps, lease keepers, decisions (default 20)")
    p.set_defaults(handler=cmd_worker)


def cmd_worker(args) -> int:
    require()
    if args.max_concurrent < 2:
        raise UsageError("--max-concurrent must be at least 2 (a lease keeper and a step)")
    from engine.temporal.client import in_loop
    from engine.temporal.worker import serve

    return in_loop(serve(args.temporal or DEFAULT_ADDRESS, args.namespace, args.task_queue, args.max_concurrent))


def _location(ledger: str) -> str:
    """A file ledger by its absolute path: workers run in folders of their own."""
    return ledger if "://" in ledger else os.path.abspath(ledger)


def _ledger_id(writer) -> str:
    """The ledger's `id`, written (a UUID) by the first start; the same for every later one."""
    from engine.approvals.identity import os_user
    from engine.store.transact import NoChange, apply

    def give(ledger):
        if ledger.id:
            raise NoChange(ledger.id)
        ledger.id = str(uuid.uuid4())
        return ledger.id

    lid, rev = apply(writer.store, give)
    if rev is not None:
        writer.journal.append("ledger_id", f"ledger id {lid} written: its Temporal workflow is {workflow_id(lid)}",
                              actor=writer.actor, rev=rev, user=os_user())
    return lid


def resume_temporal(args) -> int:
    require()
    from engine.approvals.identity import os_user
    from engine.codec.textsafe import visible
    from engine.lease.rules import lease_state
    from engine.ledger.access import open_writer
    from engine.session.preflight import preflight, refusal_text
    from engine.temporal.client import connect, follow, in_loop, start_or_attach

    location = _location(args.ledger)
    writer = open_writer(location, actor=args.actor)
    if writer.read_only:
        raise UsageError(f"cannot drive this ledger: {writer.read_only_reason}")
    reasons = preflight(writer, args.ledger, allow_unenforced=args.allow_unenforced)
    if reasons:
        raise UsageError(refusal_text(reasons, args.ledger), title="Cannot proceed")
    ledger = writer.store.read()
    state = lease_state(ledger.session, writer.store.heartbeat().current())
    if state.status == "live" and ledger.session is not None and ledger.session.runtime != "temporal":
        raise LeaseHeld(f"another session drives this ledger: {state.detail}. "
                        f"Stop it with `handoff stop {args.ledger}`, or wait for it to hand off")
    address = args.temporal or DEFAULT_ADDRESS

    async def go() -> int:
        client = await connect(address, args.namespace)  # before the ledger gets its id: a refusal changes nothing
        wid = workflow_id(_ledger_id(writer))
        job = {"ledger": location, "workflow_id": wid, "address": address, "namespace": args.namespace,
               "task_queue": args.task_queue, "actor": writer.actor, "poll": poll_seconds(),
               "starter": os_user(),  # the workers journal who started it: never one of a count's approvers
               "heartbeat_timeout": heartbeat_timeout(), "idle": idle_seconds(), "history_max": history_max()}
        if args.allow_unenforced:  # its lease says so: the guard skips an invariant it does not understand only then
            job["allow_unenforced"] = True
        if args.planner == "claude":  # the workers need the model's credential; the brief comes from the ledger
            job["planner"] = {"name": "claude", "model": args.model, "max_tokens": args.max_tokens,
                              "handoff_at": args.handoff_at, "backoff": planner_backoff()}
        offset = writer.journal.end_offset()
        handle, started = await start_or_attach(client, job, {"ledger": location, "ledger_id": wid.removeprefix("handoff-"),
                                                              "task": ledger.task or ""})
        if started:
            print(visible(f"started temporal workflow {wid} on task queue {args.task_queue} at {address}; "
                          f"`handoff worker --temporal {address}` runs it, `handoff status {args.ledger}` shows it"), flush=True)
        else:
            print(visible(f"attached to temporal workflow {wid}, already running (never a second one)"), flush=True)
        if not args.follow:
            return 0
        return await follow(handle, writer.journal, offset, json_mode=args.json)

    try:
        return in_loop(go())
    except KeyboardInterrupt:
        print("stopped following; the workflow goes on", file=sys.stderr)
        return 130
