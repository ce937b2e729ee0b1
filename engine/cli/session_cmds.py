"""The session commands of `handoff`: resume, stop, reconcile (the session issue's contract).

  handoff resume --ledger LEDGER [--dry-run] [--planner autopilot|claude] [--max-steps N]
                 [--max-minutes M] [--handoff-at 0.75] [--wait] [--as NAME] [--json]
  handoff stop LEDGER
  handoff reconcile LEDGER TARGET (--accept-checkpoint | --to STATE) --reason R

`resume` exits 0 handed off cleanly (or nothing left, or only people can move it),
2 usage or invalid ledger, 3 ledger and reality disagree, 4 paused, 5 lease held,
6 a service the session needs (the ledger's database, the planner's API) stayed unavailable.
"""

from __future__ import annotations

from engine.cli.commands import add_who
from engine.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("resume", help="run the agent session on a ledger until its budget or the work runs out",
                       epilog="exit codes: 0 handed off (or only people can move it), 2 usage or invalid ledger, "
                              "3 ledger and reality disagree, 4 paused, 5 another live session holds the lease, "
                              "6 a service the session needs (the ledger's database, the planner's API) stayed unavailable")
    p.add_argument("--ledger", required=True, help="the ledger file (or postgresql:// URL)")
    p.add_argument("--dry-run", action="store_true", help="work on a shadow copy <name>.dryrun.yaml; run only each step's check")
    p.add_argument("--planner", default="autopilot", choices=("autopilot", "claude"), help="who proposes actions (default autopilot)")
    p.add_argument("--max-steps", type=int, metavar="N", help="step budget (default: the ledger's budget.steps)")
    p.add_argument("--max-minutes", type=float, metavar="M", help="wall-clock budget in minutes (default 60)")
    p.add_argument("--handoff-at", type=float, metavar="F", help="hand off at this fraction of the budget (default 0.75)")
    p.add_argument("--wait", action="store_true", help="keep running while only approvals are missing, until the budget ends")
    p.add_argument("--json", action="store_true", help="print journal records (JSON lines) instead of text")
    add_who(p)
    p.set_defaults(handler=cmd_resume)

    p = sub.add_parser("stop", help="ask the running session to hand off and exit")
    p.add_argument("ledger")
    add_who(p)
    p.set_defaults(handler=cmd_stop)

    p = sub.add_parser("reconcile", help="resolve a drift or a block: record where a target really is")
    p.add_argument("ledger")
    p.add_argument("target")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--accept-checkpoint", action="store_true", help="run the state's probe and record what it prints as the checkpoint")
    group.add_argument("--to", metavar="STATE", help="the state the target is really in")
    p.add_argument("--reason", required=True, help="why (goes to the journal)")
    add_who(p)
    p.set_defaults(handler=cmd_reconcile)


def cmd_resume(args) -> int:
    from engine.session.loop import Options, resume

    return resume(Options(
        ledger=args.ledger, dry_run=args.dry_run, planner=args.planner, max_steps=args.max_steps,
        max_minutes=args.max_minutes, handoff_at=args.handoff_at, wait=args.wait, actor=args.actor, json=args.json,
    ))


def cmd_stop(args) -> int:
    from engine.api import open_ledger
    from engine.textsafe import visible

    handle = open_ledger(args.ledger, actor=args.actor)
    session = handle.load().session
    handle.request_stop()
    print(visible(f"stop requested for session {session.id if session else '?'}; it finishes running steps, "
                  "writes the handoff note and exits"))
    return 0


def cmd_reconcile(args) -> int:
    from engine.api import open_ledger
    from engine.session.reconcile import reconcile_target
    from engine.textsafe import visible

    if not args.reason.strip():
        raise UsageError("--reason must say why (it goes to the journal)")
    handle = open_ledger(args.ledger, actor=args.actor)
    print(visible(reconcile_target(handle, args.target, accept_checkpoint=args.accept_checkpoint, to=args.to,
                                   reason=args.reason.strip())))
    return 0
