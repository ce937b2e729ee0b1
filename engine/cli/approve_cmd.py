"""`handoff approve`: an approval approves exactly what the approver saw, and says so.

- `--expect-hash H`: approve only if what would run still has hash H (the hash
  `handoff status --json` and the TUI show); otherwise exit 1, nothing recorded.
- On a terminal, without --expect-hash: show the exact command (one argument a line),
  the checkpoint and the hash, and ask for the target's name, as the TUI does;
  a wrong name, end of input or Ctrl-C approves nothing (exit 1). `--yes` skips it.
- Without a terminal: approve what is on disk now.
- `--key FILE`: an approver with an `ssh_key` signs with FILE (else the ssh-agent at
  SSH_AUTH_SOCK); the signature is checked now and again before the step starts.
- A target whose checkpoint drifted (engine.api.checkpoint_drift): a warning first;
  on a terminal the name typed approves it anyway; elsewhere only `--yes` does (else
  exit 1, nothing recorded). Sessions refuse it until `handoff reconcile` either way.
  The approval is bound to the drift warned of (none, or that one): a drift recorded,
  changed or reconciled after the warning (while the name is typed) refuses it, exit 1.
- `--targets PATTERN` (with `--step`): a batch (engine.cli.approve_batch).
Whatever the path, what was approved (argv, checkpoint, hash) is printed.
"""

from __future__ import annotations

import json
import sys

from engine.api import checkpoint_drift, drift_said
from engine.codec.textsafe import shell_word, visible
from engine.errors import ApprovalChanged, UsageError


def show(pending, target: str, out=sys.stdout) -> None:
    """The command an approval would bind, for a person to read."""
    kind = "IRREVERSIBLE" if pending.irreversible else "reversible"
    lines = [f"{visible(target)}: {visible(pending.step.name)} ({kind}) would run:"]
    lines += [f"    {shell_word(arg)}" for arg in pending.argv]  # one line per argument, quoted: nothing reads alike
    lines.append(f"  checkpoint: {visible(pending.checkpoint or '-')}")
    lines.append(f"  hash: {pending.hash}")
    if pending.folder:
        lines.append(f"  runs in: {shell_word(pending.folder)}")
    print("\n".join(lines), file=out, flush=True)


def read_answer(prompt: str) -> str:
    """One line typed on the terminal, stripped ("" on end of input or Ctrl-C)."""
    try:
        typed = _typed_line(prompt)
    except KeyboardInterrupt:
        typed = ""
    if not typed.endswith("\n"):
        print("", file=sys.stderr)  # Ctrl-D or Ctrl-C left the cursor on the prompt's line
    return typed.strip()


def _typed_line(prompt: str) -> str:
    """Write `prompt` and read one line, as the terminal hands it over (one line per read in its
    line mode). Not input() (readline's own terminal handling can swallow Ctrl-C), nor a plain
    readline(): a Ctrl-C typed the instant the prompt appears, before the read blocks, sets
    Python's flag but wakes nothing, and the prompt waited for ever. Signals are also written to
    a pipe the read waits on beside the terminal, from before the prompt is shown."""
    import os
    import select
    import signal

    sys.stdout.write(prompt)
    try:
        wake_r, wake_w = os.pipe()
    except OSError:
        sys.stdout.flush()
        return sys.stdin.readline()
    try:
        os.set_blocking(wake_w, False)
        try:
            previous = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: no wake-up pipe to be had
            sys.stdout.flush()
            return sys.stdin.readline()
        try:
            sys.stdout.flush()
            fd = sys.stdin.fileno()
            while True:
                ready, _, _ = select.select([fd, wake_r], [], [])
                if wake_r in ready and signal.SIGINT in os.read(wake_r, 64):
                    raise KeyboardInterrupt
                if fd in ready:
                    return os.read(fd, 65536).decode("utf-8", "replace")
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        os.close(wake_r)
        os.close(wake_w)


def _ask(target: str, anyway: bool = False) -> bool:
    typed = read_answer(f"Type {visible(target)} to approve it{' anyway' if anyway else ''} (anything else cancels): ")
    return bool(typed) and typed == target  # "" is also Ctrl-C and end of input: never a yes


def drift_warning(name: str, reason: str) -> str:
    """What a person is told before approving a target whose checkpoint drifted."""
    said = drift_said(reason)
    return (f"WARNING: {name}'s checkpoint drifted: {said}. Sessions refuse {name} until "
            f"`handoff reconcile` records where it really is, approved or not")


def cmd_approve(args) -> int:
    from engine.cli.arguments import open_handle

    if args.target is None:
        raise UsageError("say which target to approve: TARGET, or --step STEP --targets PATTERN for several")
    handle = open_handle(args)
    ledger = handle.load()
    pending = handle.pending_command(ledger, args.target, step=args.step)
    expect = args.expect_hash
    drifted = checkpoint_drift(ledger.targets[args.target])
    if drifted:
        print(visible(f"handoff: {drift_warning(args.target, drifted)}"), file=sys.stderr, flush=True)
    if expect is None and not args.yes and sys.stdin.isatty():
        show(pending, args.target)
        if not _ask(args.target, anyway=bool(drifted)):
            print("handoff: the name did not match; nothing was approved", file=sys.stderr)
            return 1
    elif drifted and not args.yes:
        print("handoff: nothing was approved: approve a drifted target on a terminal, or anyway with --yes", file=sys.stderr)
        return 1
    try:
        approval = handle.approve(args.target, step=args.step, comment=args.comment, expect_hash=expect or pending.hash,
                                  key=getattr(args, "key", None), expect_drift=drifted)  # the drift warned of, or none
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
