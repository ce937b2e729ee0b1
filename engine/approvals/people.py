"""What only people may do, and how the engine tells that an agent is asking.

One list names the people-only operations (DESIGN: "Who may do what"). The Claude Code
pre-tool-use hook denies them in every spelling it can parse (engine.hooks), and the
engine itself refuses them when the calling process runs in an agent's environment:
- a process started by a Claude Code session (Claude Code sets `CLAUDECODE` and
  `CLAUDE_CODE_*` variables for the commands its tools run);
- any process the engine spawns for a step, a probe or a metric, and any runtime's
  worker and its children: the engine sets `HANDOFF_AGENT=<holder>` for them.
Clearing those variables is possible for a determined agent; verified approvers
(`os_user`, `ssh_key`) are what make an approval a fact the engine can check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

AGENT_VAR = "HANDOFF_AGENT"
CLAUDE_VARS = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_SSE_PORT")


class PeopleOnly(NamedTuple):
    """One people-only operation: the `handoff` command, and the flag that makes it one
    (None: the command itself), with what a person runs instead."""

    command: str
    flag: str | None
    what: str


PEOPLE_ONLY: tuple[PeopleOnly, ...] = (
    PeopleOnly("approve", None, "approving an irreversible step"),
    PeopleOnly("unapprove", None, "withdrawing an approval"),
    PeopleOnly("reject", None, "rejecting a step"),
    PeopleOnly("unblock", None, "putting a blocked or failed target back"),
    PeopleOnly("reset", None, "resetting a target"),
    PeopleOnly("reconcile", None, "reconciling the ledger with reality"),
    PeopleOnly("unpause", None, "unpausing the ledger"),
    PeopleOnly("retry", "--force", "retrying an irreversible step"),
    PeopleOnly("check", "--accept-rollback", "accepting that the ledger went back in time"),
    PeopleOnly("check", "--accept-removal", "accepting that targets were removed"),
    PeopleOnly("import", "--replace", "replacing a ledger in the database"),
)


def people_only(command: str, args: list[str]) -> PeopleOnly | None:
    """The people-only operation `handoff COMMAND ARGS...` is, or None."""
    for op in PEOPLE_ONLY:
        if op.command != command:
            continue
        if op.flag is None or any(a == op.flag or a.startswith(op.flag + "=") for a in args):
            return op
    return None


def agent_caller(env: Mapping[str, str] | None = None) -> str | None:
    """Which agent this process runs for (a short description), or None for a person."""
    env = os.environ if env is None else env
    if AGENT_VAR in env:  # set at all, as the Claude Code variables below: emptied, it still marks an agent
        return f"a process the engine started for {env[AGENT_VAR] or 'an agent'}"
    if any(name in env for name in CLAUDE_VARS):  # set at all: `CLAUDECODE= handoff ...` is still Claude Code's call
        session = env.get("CLAUDE_CODE_SESSION_ID")
        return "a Claude Code session" + (f" ({session})" if session else "")
    return None


def people_only_words(command: str, args: list[str]) -> PeopleOnly | None:
    """`people_only`, also for the abbreviations argparse accepts (`--f` for `--force`,
    `--accept-r` for `--accept-rollback`): the hook reads a command line as the parser will."""
    spelled = list(args)
    for arg in args:
        name = arg.split("=", 1)[0]
        if not name.startswith("--") or len(name) < 3:
            continue
        spelled += [op.flag for op in PEOPLE_ONLY if op.command == command and op.flag and op.flag.startswith(name)]
    return people_only(command, spelled)
