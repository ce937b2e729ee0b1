"""`handoff approve LEDGER --step STEP --targets PATTERN`: approve one step on several targets.

For people who have looked: every matched target's command (one argument a line),
checkpoint and hash is printed, and those the pattern matches but the batch leaves out
are named with why. On a terminal the person types the step's name and then how many
targets, or nothing is approved (`--yes` skips both); elsewhere what was printed is
approved. One approval per target, each bound to the hash printed for it and to the
drift warned of for it (none, or that one), and checked as a single approval is
(engine.approvals.batch); one refused target refuses them all.
"""

from __future__ import annotations

import sys

from engine.cli.approve_cmd import drift_warning, read_answer, show
from engine.codec.textsafe import visible
from engine.errors import UsageError


def cmd_approve_batch(args) -> int:
    from engine.api import checkpoint_drift
    from engine.cli.arguments import open_handle

    if args.target is not None:
        raise UsageError(f"give a TARGET or --targets PATTERN, not both (got {args.target!r} and --targets {args.targets!r})")
    if not args.step:
        raise UsageError("--targets needs --step STEP: a batch approves one named step (for example --step cordon)")
    if args.expect_hash is not None:
        raise UsageError("--expect-hash is for one target; a batch shows and checks each target's own hash")
    handle = open_handle(args)
    ledger = handle.load()
    picked = handle.select_batch(ledger, args.targets, args.step)
    for name, why in picked.skipped:
        print(visible(f"not in this batch: {name}: {why}"), file=sys.stderr)
    if not picked.chosen:
        print(visible(f"handoff: no target matching {args.targets!r} can take an approval of {args.step}; nothing was approved"),
              file=sys.stderr)
        return 1
    for name, pending in picked.chosen:
        show(pending, name)
        drifted = checkpoint_drift(ledger.targets[name])
        if drifted:
            print(visible(f"  {drift_warning(name, drifted)}"), flush=True)
    count = len(picked.chosen)
    if not args.yes and sys.stdin.isatty():
        step = read_answer(f"Type the step's name ({visible(args.step)}) to approve it on these targets (anything else cancels): ")
        if step != args.step:
            print("handoff: the step's name did not match; nothing was approved", file=sys.stderr)
            return 1
        typed = read_answer(f"Type how many targets you approve it on ({count}): ")
        if typed != str(count):
            print(f"handoff: {typed or 'nothing'} is not {count}, the number of targets shown; nothing was approved", file=sys.stderr)
            return 1
    elif not args.yes and any(checkpoint_drift(ledger.targets[n]) for n, _ in picked.chosen):
        print("handoff: nothing was approved: the batch holds a drifted target; approve it on a terminal, or anyway with --yes",
              file=sys.stderr)
        return 1
    expect = {name: pending.hash for name, pending in picked.chosen}
    shown = {name: checkpoint_drift(ledger.targets[name]) for name in expect}  # the drift warned of, or none
    approvals = handle.approve_batch(expect, step=args.step, comment=args.comment, key=getattr(args, "key", None),
                                     expect_drift=shown)
    for name, approval in zip(expect, approvals, strict=True):
        verified = f", verified: {approval.verified}" if approval.verified and approval.verified != "none" else ""
        print(visible(f"{name}: {approval.step} approved by {approval.by} ({approval.user}) at {approval.at}; "
                      f"hash {approval.hash}{verified}"))
    print(visible(f"{len(approvals)} approval(s) of {args.step} recorded, one per target"))
    return 0
