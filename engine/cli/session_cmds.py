"""The session commands of `handoff`: resume, stop, reconcile (the session issue's contract).

  handoff resume --ledger LEDGER [--dry-run] [--planner autopilot|claude] [--model M]
                 [--max-tokens N] [--max-steps N] [--max-minutes M] [--handoff-at 0.75]
                 [--wait] [--as NAME] [--json]
                 [--runtime session|temporal|langgraph] [--temporal HOST:PORT] [--namespace NS] [--task-queue Q] [--follow]
                 [--checkpointer postgresql://...] [--keep-checkpoints N]
  handoff stop LEDGER
  handoff reconcile LEDGER TARGET (--accept-checkpoint | --to STATE) --reason R

`resume` exits as RESUME_EXITS says (also printed by `handoff resume --help`); with
`--runtime temporal` see engine.cli.temporal_cmds, with `--runtime langgraph` engine.cli.langgraph_cmds.
"""

from __future__ import annotations

import argparse

from engine.cli import arguments
from engine.cli.commands import add_who
from engine.errors import UsageError

RESUME_EXITS = """\
exit codes:
  0  handed off cleanly (or nothing left, or only people can move it)
  2  usage, invalid ledger, no Anthropic credential for --planner claude, or it can never proceed as written
     (it says why and changes nothing but one journal record)
  3  the ledger and reality disagree
  4  paused by an invariant or an operator
  5  another live holder has the lease
  6  a service the session needs stayed unavailable (the planner's API, or the ledger's database)"""


def register(sub) -> None:
    p = sub.add_parser("resume", help="run an agent session: verify reality, act where invariants and approvals allow, hand off before the budget ends",
                       epilog=RESUME_EXITS, formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add(p)
    p.add_argument("--dry-run", action="store_true", help="rehearse on a copy (<name>.dryrun.yaml), running only each step's check form")
    p.add_argument("--planner", default="autopilot", choices=("autopilot", "claude"),
                   help="who proposes the next step: autopilot (default, runbook order) or claude (needs ANTHROPIC_API_KEY or another SDK credential)")
    p.add_argument("--model", metavar="M", help="the Claude model (default: the ledger's agent.model, else the built-in default)")
    p.add_argument("--max-tokens", type=int, metavar="N", help="hand off after the model has used this many tokens (default: budget.tokens)")
    p.add_argument("--max-steps", type=int, metavar="N", help="hand off after this many steps (default: the ledger's budget.steps)")
    p.add_argument("--max-minutes", type=float, metavar="M", help="hand off after this many minutes (default: budget.minutes, else 60)")
    p.add_argument("--handoff-at", type=float, metavar="F", help="hand off at this fraction of the budget (default: budget.handoff_at, else 0.75)")
    p.add_argument("--wait", action="store_true", help="stay while targets wait for approval, and go on as they are given (until the budget ends)")
    p.add_argument("--json", action="store_true", help="print journal records (JSON lines) instead of text, for scripts")
    p.add_argument("--allow-unenforced", action="store_true",
                   help="run even though some invariants are not understood (journaled; they are NOT enforced)")
    p.add_argument("--runtime", choices=("session", "temporal", "langgraph"), default="session",
                   help="session (default): this process drives the ledger; temporal: start or attach to the ledger's "
                        "Temporal workflow, run by `handoff worker` (needs the temporal extra); langgraph: this process "
                        "runs the ledger's LangGraph thread, checkpointed in PostgreSQL (needs the langgraph extra)")
    from engine.cli.langgraph_cmds import add_options
    from engine.cli.temporal_cmds import add_server

    add_server(p)
    add_options(p)
    p.add_argument("--follow", action="store_true", help="runtime temporal: print the workflow's progress and exit with its code")
    from engine.cli.arguments import add_verbosity

    add_verbosity(p, sub=True)
    add_who(p)
    p.set_defaults(handler=arguments.resolved(cmd_resume))

    p = sub.add_parser("stop", help="ask the running session to finish its running steps, write the handoff note and exit")
    p.add_argument("ledger", help="the ledger file (or its postgresql:// location)")
    add_who(p)
    p.set_defaults(handler=cmd_stop)

    p = sub.add_parser("reconcile", help="after drift or a block: record where a target really is, from its probe or your word")
    p.add_argument("ledger", help="the ledger file (or its postgresql:// location)")
    p.add_argument("target", help="the target's name as the ledger spells it (db-18)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--accept-checkpoint", action="store_true", help="run the state's probe and record what it prints as the checkpoint (reality wins)")
    group.add_argument("--to", metavar="STATE", help="the state the target is really in")
    p.add_argument("--reason", required=True, help="why (goes to the journal)")
    add_who(p)
    p.set_defaults(handler=cmd_reconcile)


def cmd_resume(args) -> int:
    from engine.session.loop import Options, resume

    if args.runtime == "temporal":
        if args.dry_run or args.planner not in ("autopilot", "claude") or args.wait:
            raise UsageError("--runtime temporal plans with autopilot or claude and waits on approvals by itself: "
                             "--dry-run, other planners and --wait are for the built-in session")
        from engine.cli.temporal_cmds import resume_temporal

        return resume_temporal(args)
    if args.runtime == "langgraph":
        if args.dry_run or args.follow or args.temporal:
            raise UsageError("--runtime langgraph runs the ledger's graph in this process and waits on approvals by itself: "
                             "--dry-run, --follow and --temporal are for the other runtimes")
        from engine.cli.langgraph_cmds import resume_langgraph

        return resume_langgraph(args)
    if args.follow or args.temporal:
        raise UsageError("--follow and --temporal go with --runtime temporal")

    return resume(Options(
        ledger=args.ledger, dry_run=args.dry_run, planner=args.planner, model=args.model, max_tokens=args.max_tokens,
        max_steps=args.max_steps,
        max_minutes=args.max_minutes, handoff_at=args.handoff_at, wait=args.wait, actor=args.actor, json=args.json,
        allow_unenforced=args.allow_unenforced,
    ))


def cmd_stop(args) -> int:
    from engine.cli.arguments import open_handle
    from engine.codec.textsafe import visible
    from engine.temporal.names import HANDED_OFF

    handle = open_handle(args)
    session = handle.load().session
    handle.request_stop()
    temporal = session is not None and session.runtime == "temporal"
    who = f"{'temporal workflow' if temporal else 'session'} {session.id if session else '?'}"
    if temporal and HANDED_OFF in (handle.woke or ""):
        # The workflow ended on its own (it saw this request, or had nothing left) before the signal.
        print(visible(f"stop requested for {who} and recorded in the ledger; the workflow had already handed off"))
        return 0
    if temporal and not (handle.woke or "").startswith("signalled temporal workflow"):
        # Recorded, but nothing has told the workflow (its server is down, or it ended): no promise of when.
        print(visible(f"stop requested for {who} and recorded in the ledger; the workflow has not been told "
                      "(see below), so nothing hands off until it looks again"))
        return 0
    print(visible(f"stop requested for {who}; it finishes running steps, writes the handoff note and exits"))
    return 0


def cmd_reconcile(args) -> int:
    from engine.cli.arguments import open_handle
    from engine.codec.textsafe import visible
    from engine.session.reconcile import reconcile_target

    if not args.reason.strip():
        raise UsageError("--reason must say why (it goes to the journal)")
    handle = open_handle(args)
    print(visible(reconcile_target(handle, args.target, accept_checkpoint=args.accept_checkpoint, to=args.to,
                                   reason=args.reason.strip())))
    return 0
