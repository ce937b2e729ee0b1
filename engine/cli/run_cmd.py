"""`handoff run LEDGER TARGET [STEP]`: one guarded step, through the same decision core
as a session (engine.session.single), under the ledger's lease.

Who holds the lease: inside Claude Code (CLAUDE_CODE_SESSION_ID is set, as it is for every
Bash-tool command) the Claude Code session, whose lease records no pid and stays after
the step (its session-end hook gives it back); otherwise this command, for as long as it
runs. Either way the heartbeat beats while the step runs, and a live lease of anyone
else means exit 5 naming the holder.
"""

from __future__ import annotations

import os

from engine.cli.commands import add_who
from engine.errors import HandoffError, NoSuchTarget, UsageError

CLAUDE_SESSION_VAR = "CLAUDE_CODE_SESSION_ID"


def register(sub) -> None:
    p = sub.add_parser("run", help="run one step on one target, guarded and recorded as a session would (Claude Code's hands)")
    p.add_argument("ledger", help="the ledger file (or its postgresql://host/db#name location)")
    p.add_argument("target", help="the target to act on")
    p.add_argument("step", nargs="?", help="the runbook step (default: the one step the runbook allows from where it is)")
    p.add_argument("--json", action="store_true", help="print journal records (JSON lines) instead of text")
    add_who(p)
    p.set_defaults(handler=cmd_run)


def cmd_run(args) -> int:
    from engine.approvals.identity import os_user
    from engine.lease import leasing
    from engine.lease.rules import HeartbeatThread, new_session_id
    from engine.ledger.access import open_writer
    from engine.session.preflight import preflight, refusal_text
    from engine.session.single import StepActor, pick_step, run_one

    writer = open_writer(args.ledger, actor=args.actor)
    if writer.read_only:
        raise UsageError(f"cannot act on this ledger: {writer.read_only_reason}")
    reasons = preflight(writer, args.ledger)
    if reasons:
        text = refusal_text(reasons, args.ledger)
        writer.journal.append("run_refused", text, actor=writer.actor, user=os_user(), target=args.target)
        raise UsageError(text, title="Cannot proceed")
    ledger = writer.store.read()
    if args.target not in ledger.targets:  # a usage error changes nothing: found before the lease is taken
        raise NoSuchTarget(args.target, ledger.targets, ledger=args.ledger)
    pick_step(ledger, args.target, args.step, where=writer.display_location)
    claude = os.environ.get(CLAUDE_SESSION_VAR) or None
    holder = claude or new_session_id()
    lease = leasing.claude_code_lease(holder, user=writer.actor) if claude else \
        leasing.session_lease(holder, user=writer.actor, planner="handoff run")
    previous, taken = leasing.acquire(writer.store, args.ledger, lease, phase=f"handoff run {args.target}")
    # A person running a step asks for its approval in their own name: they cannot approve it themselves.
    actor = StepActor(writer, holder, ledger_arg=args.ledger, json=args.json,
                      identity=None if claude else writer.actor)
    # Every write of the engine's has its journal record (its revision): `handoff check` finds a
    # journal behind the ledger's last write otherwise.
    actor.out.record("lease_take", f"handoff run {args.target} ({holder}) holds the lease"
                     + (f" (took it over: {previous.detail})" if previous.status in ("dead", "stale") else ""), rev=taken)
    beat = HeartbeatThread(writer.store.heartbeat(), holder, state_fn=lambda: {"phase": f"handoff run {args.target}"})
    beat.start()
    actor.beat = beat
    try:
        return run_one(actor, args.target, args.step)
    except HandoffError as err:
        actor.out.say(f"{args.target}: {err}", target=args.target, kind="error")
        return err.exit_code if err.exit_code in (2, 3, 4, 5) else 1
    finally:
        beat.stop()
        if not claude:
            released = leasing.release(writer.store, holder)
            if released is not None:
                actor.out.record("lease_release", f"handoff run {args.target} ({holder}) gave the lease back", rev=released)
