"""`handoff approve`: an approval approves exactly what the approver saw, and says so.

- `--expect-hash H`: approve only if what would run still has hash H (the hash
  `handoff status --json` and the TUI show); otherwise exit 1, nothing recorded.
- On a terminal, without --expect-hash: show the exact command (one argument a line),
  the checkpoint and the hash, and ask for the target's name, as the TUI does;
  a wrong name, end of input or Ctrl-C approves nothing (exit 1). `--yes` skips it.
- Without a terminal: approve what is on disk now.
- `--key FILE`: an approver with an `ssh_key` signs with FILE (else the ssh-agent at
  SSH_AUTH_SOCK); the signature is checked now and again before the step starts.
Whatever the path, what was approved (argv, checkpoint, hash) is printed.
"""

from __future__ import annotations

import json
import sys

from engine.codec.textsafe import visible
from engine.errors import ApprovalChanged


def show(pending, target: str, out=sys.stdout) -> None:
    """The command an approval would bind, for a person to read."""
    kind = "IRREVERSIBLE" if pending.irreversible else "reversible"
    lines = [f"{target}: {pending.step.name} ({kind}) would run:"]
    lines += [f"    {visible(arg)}" for arg in pending.argv]
    lines.append(f"  checkpoint: {visible(pending.checkpoint or '-')}")
    lines.append(f"  hash: {pending.hash}")
    print("\n".join(lines), file=out, flush=True)


def _ask(target: str) -> bool:
    # A plain line read, not input(): readline's own terminal handling can swallow Ctrl-C.
    sys.stdout.write(f"Type {visible(target)} to approve it (anything else cancels): ")
    sys.stdout.flush()
    try:
        typed = sys.stdin.readline()
    except KeyboardInterrupt:
        typed = ""
    if not typed.endswith("\n"):
        print("", file=sys.stderr)  # Ctrl-D or Ctrl-C left the cursor on the prompt's line
    return typed.strip() == target


def cmd_approve(args) -> int:
    from engine.cli.arguments import open_handle

    handle = open_handle(args)
    pending = handle.pending_command(handle.load(), args.target, step=args.step)
    expect = args.expect_hash
    if expect is None and not args.yes and sys.stdin.isatty():
        show(pending, args.target)
        if not _ask(args.target):
            print("handoff: the name did not match; nothing was approved", file=sys.stderr)
            return 1
    try:
        approval = handle.approve(args.target, step=args.step, comment=args.comment, expect_hash=expect or pending.hash,
                                  key=getattr(args, "key", None))
    except ApprovalChanged as err:
        if err.now is not None and expect is None:
            print("You were shown:", file=sys.stderr)
            show(pending, args.target, sys.stderr)
            print("It is now:", file=sys.stderr)
            show(err.now, args.target, sys.stderr)
        print(f"handoff: {visible(err.message)}", file=sys.stderr)
        return 1
    print(visible(f"{args.target}: {approval.step} approved by {approval.by} ({approval.user}) at {approval.at}"))
    print(visible("  argv: " + json.dumps(pending.argv, ensure_ascii=False)))
    print(visible(f"  checkpoint: {approval.checkpoint or '-'}"))
    print(f"  hash: {approval.hash}")
    if approval.verified and approval.verified != "none":
        print(f"  verified: {approval.verified}")
    return 0
