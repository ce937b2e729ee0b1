"""What approving a step takes (its policy) and how each approval given was verified.

The policy sentence is the engine's (engine.approvals.policy `describe_request`, through
the controller); how an approval was verified is its recorded `verified` field
(engine.approvals.approvers: none | os_user | ssh_key | os_user+ssh_key). Both are
shown as text: what the ledger says, never markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tui.text import clean_line

_HOW = {
    "os_user": "verified by OS login (uid)",
    "ssh_key": "verified by SSH signature",
    "os_user+ssh_key": "verified by OS login and SSH signature",
}


def verified_word(approval: Any) -> str:
    """How `approval` was verified, in words; an approval recorded without proof says so."""
    how = getattr(approval, "verified", None)
    if not how or how == "none":
        return "not verified (nothing proves who)"
    return _HOW.get(how, f"verified: {clean_line(how)}")


def given(target: Any, step: str | None) -> list[Any]:
    """The unused approvals of `step` on `target` (what counts towards its policy now)."""
    return [a for a in getattr(target, "approvals", None) or [] if a.step == step and not a.used_at]


def policy_lines(policy: str | None, target: Any, step: str | None) -> list[Text]:
    """For the approval dialog: the policy, then the approvals given with how each was
    verified; each line never wraps (the dialog counts them). Empty when there is neither
    (the default policy, none given yet)."""
    lines = []
    if policy:
        line = Text("policy ", style="bold", end="", no_wrap=True, overflow="ellipsis")
        line.append(clean_line(policy))
        lines.append(line)
    approvals = given(target, step)
    if approvals:
        line = Text("given ", style="bold", end="", no_wrap=True, overflow="ellipsis")
        line.append("; ".join(clean_line(f"{a.by}: {verified_word(a)}") for a in approvals))
        lines.append(line)
    return lines
