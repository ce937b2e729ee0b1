"""The engine's own lock on people-only operations (engine.approvals.people names them).

The Claude Code hook denies them as a net; this is the lock: whatever path reaches the
engine (the CLI, the TUI, a script importing `engine.api`), an operation on the list is
refused when the calling process runs in an agent's environment. The refusal changes
nothing in the ledger and writes one journal record, `people_only_refused`, so the
next person sees that an agent tried.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.approvals.people import PEOPLE_ONLY, PeopleOnly, agent_caller
from engine.errors import Refused

# How each people-only command reads in a sentence: (what it is, what the agent may not do).
_WORDS: dict[tuple[str, str | None], tuple[str, str]] = {
    ("approve", None): ("approving", "approve"),
    ("unapprove", None): ("withdrawing an approval", "withdraw one"),
    ("reject", None): ("rejecting a step", "reject one"),
    ("unblock", None): ("unblocking a target", "unblock one"),
    ("reset", None): ("resetting a target", "reset one"),
    ("reconcile", None): ("reconciling the ledger with reality", "reconcile"),
    ("unpause", None): ("unpausing the ledger", "unpause it"),
    ("retry", "--force"): ("retrying an irreversible step", "force a retry"),
    ("check", "--accept-rollback"): ("accepting a rollback of the ledger", "accept one"),
    ("check", "--accept-removal"): ("accepting that targets were removed", "accept it"),
    ("import", "--replace"): ("replacing a ledger in the database", "replace one"),
}


class PeopleOnlyRefused(Refused):
    """A people-only operation asked for from an agent's process (exit 1, nothing changed)."""

    title = "People only"


def operation(command: str, flag: str | None = None) -> PeopleOnly:
    """The list's entry for `handoff COMMAND [FLAG]` (KeyError if it is not people-only)."""
    for op in PEOPLE_ONLY:
        if op.command == command and op.flag == flag:
            return op
    raise KeyError(f"{command} {flag or ''} is not a people-only operation".strip())


def refusal_text(caller: str, command: str, flag: str | None, ledger: str, target: str | None) -> str:
    """`approving is for people; an agent's process (...) may not approve. A person runs: ...`."""
    what, verb = _WORDS.get((command, flag), (f"`handoff {command}`", "run it"))
    argv = " ".join(part for part in ("handoff", command, ledger, target or "", flag or "") if part)
    return f"{what} is for people; an agent's process ({caller}) may not {verb}. A person runs: {argv}"


def refuse_if_agent(journal, command: str, *, flag: str | None = None, target: str | None = None, ledger: str,
                    actor: str, user: str, rev: int | None = None, env: Mapping[str, str] | None = None) -> None:
    """Raise PeopleOnlyRefused (after journaling it) when this process runs for an agent.

    `journal` may be None (nowhere to record, e.g. a read-only copy): the refusal stands."""
    caller = agent_caller(env)
    if caller is None:
        return
    operation(command, flag)  # a typo here would silently guard nothing
    text = refusal_text(caller, command, flag, ledger, target)
    if journal is not None:
        journal.append("people_only_refused", text, actor=actor, rev=rev, target=target, user=user,
                       command=command, flag=flag, caller=caller)
    raise PeopleOnlyRefused(text)
