"""`handoff resume --runtime langgraph`: the ledger driven by a LangGraph graph in this process.

  handoff resume --ledger L --runtime langgraph --checkpointer postgresql://... [--keep-checkpoints N]
                 [--planner claude [--model M] [--max-tokens N] [--handoff-at F]]

The graph's checkpoints live in the PostgreSQL database `--checkpointer` names (its tables
are created on first use); its thread is `handoff-<ledger id>`, the ledger's `id` written
on the first start. Exits as a session does: 0 handed off (done, stopped, or only people
can move it), 2 usage or without the `langgraph` extra, 3 drift, 4 paused, 5 another live
holder has the lease, 6 the checkpointer's database does not answer (at the start, or
for longer than HANDOFF_DB_OUTAGE_SECONDS mid-run) or the planner's API stayed unavailable.
With `--planner claude` the graph's plan node is the Claude planner (engine.langgraph.planning).
"""

from __future__ import annotations

import os
import uuid

from engine import settings
from engine.errors import LeaseHeld, UsageError

DEFAULT_KEEP = 20


def add_options(p) -> None:
    """The runtime's options on `handoff resume`."""
    p.add_argument("--checkpointer", metavar="URL", default=settings.text("HANDOFF_LANGGRAPH_CHECKPOINTER"),
                   help="runtime langgraph: the PostgreSQL database of the graph's checkpoints "
                        "(default $HANDOFF_LANGGRAPH_CHECKPOINTER)")
    p.add_argument("--keep-checkpoints", type=int, default=DEFAULT_KEEP, metavar="N",
                   help=f"runtime langgraph: keep the newest N checkpoints of the thread (default {DEFAULT_KEEP})")


def _ledger_id(writer) -> str:
    """The ledger's `id`, written (a UUID) by the first start; the same for every later one."""
    from engine.approvals.identity import os_user
    from engine.langgraph import thread_id
    from engine.store.transact import NoChange, apply

    def give(ledger):
        if ledger.id:
            raise NoChange(ledger.id)
        ledger.id = str(uuid.uuid4())
        return ledger.id

    lid, rev = apply(writer.store, give)
    if rev is not None:
        writer.journal.append("ledger_id", f"ledger id {lid} written: its LangGraph thread is {thread_id(lid)}",
                              actor=writer.actor, rev=rev, user=os_user())
    return lid


def _acquire(store, location: str, lease):
    """engine.lease.leasing.acquire, but any live lease is refused, another run of the same thread's
    too: two processes must never run one thread at once.
    Decided in the one store transaction that writes the lease."""
    from engine.lease.rules import lease_state
    from engine.store.filelock import LockTimeout

    heartbeat = store.heartbeat()

    def take(ledger):
        state = lease_state(ledger.session, heartbeat.current())
        if state.status == "live":
            raise LeaseHeld(f"another process drives this ledger: {state.detail}. "
                            f"Stop it with `handoff stop {location}`, or wait for it to hand off")
        heartbeat.write(lease.id, phase="langgraph run starting")
        ledger.session = lease
        return state

    try:
        return store.transact(take)
    except LockTimeout as err:
        raise LeaseHeld(f"cannot take the lease: {err.message}") from None


def _planner(args) -> dict:
    """The plan node's planner as the job carries it; for claude the SDK's credential is
    found now (exit 2 before anything is written), as `get_planner` does for a session."""
    from engine.planners.choose import get_planner

    if args.handoff_at is not None and not 0 < args.handoff_at <= 1:
        raise UsageError("--handoff-at is a fraction of the budget, more than 0 and at most 1 (default 0.75)")
    get_planner(args.planner, model=args.model, max_tokens=args.max_tokens)
    if args.planner != "claude":
        return {"name": "autopilot"}
    return {"name": "claude", "model": args.model, "max_tokens": args.max_tokens, "handoff_at": args.handoff_at}


def resume_langgraph(args) -> int:
    from engine.langgraph import holder_id, require, thread_id

    if not args.checkpointer or not args.checkpointer.startswith(("postgresql://", "postgres://")):
        raise UsageError("--runtime langgraph needs --checkpointer postgresql://HOST/DB (or $HANDOFF_LANGGRAPH_CHECKPOINTER): "
                         "the database that keeps the graph's checkpoints")
    if args.keep_checkpoints < 1:
        raise UsageError("--keep-checkpoints must be at least 1 (the checkpoint the thread resumes from)")
    planner = _planner(args)  # the flags are checked before the heavy imports: a typo is answered at once
    require()
    import psycopg

    from engine.errors import ServiceUnavailable
    from engine.langgraph.runtime import Run
    from engine.lease import leasing
    from engine.ledger.access import open_writer
    from engine.session.preflight import preflight, refusal_text

    location = args.ledger if "://" in args.ledger else os.path.abspath(args.ledger)
    writer = open_writer(location, actor=args.actor)
    if writer.read_only:
        raise UsageError(f"cannot drive this ledger: {writer.read_only_reason}")
    reasons = preflight(writer, args.ledger, allow_unenforced=args.allow_unenforced)
    if reasons:
        raise UsageError(refusal_text(reasons, args.ledger), title="Cannot proceed")
    try:  # the checkpointer answers before the ledger gets its id or a lease: a refusal changes nothing
        psycopg.connect(args.checkpointer, connect_timeout=10).close()
    except psycopg.Error as err:
        raise ServiceUnavailable(f"the checkpointer database does not answer: {str(err).strip()}") from None
    tid = thread_id(_ledger_id(writer))
    holder = holder_id(tid)
    lease = leasing.session_lease(holder, user=writer.actor, planner=planner["name"], runtime="langgraph",
                                  allow_unenforced=True if args.allow_unenforced else None)
    try:
        previous, _rev = _acquire(writer.store, args.ledger, lease)
    except LeaseHeld as err:
        writer.journal.append("session_refused", f"langgraph thread {tid} not started: {err.message}", actor=f"agent:{tid}")
        raise
    job = {"ledger": location, "ledger_arg": args.ledger, "thread_id": tid, "holder": holder, "actor": writer.actor,
           "planner": planner}
    return Run(job, args.checkpointer, args.keep_checkpoints).go(previous)
