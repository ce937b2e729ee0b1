"""What a target asks now: the request a reject, and the reason kept for it, are bound to.

A target awaiting approval asks for one step (`awaiting`), whose command and checkpoint
have one hash, since one moment (`awaiting_since`). The reject prompt names it and sends
the step and hash to the engine (which refuses a "no" to anything else); a reason a
refused reject left is kept only while the target still asks exactly this (tui.mutations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from engine.api import HandoffError


class Renders(Protocol):
    """What gives the hash (tui.controller.Controller; not imported: the controller imports tui.messages, which names Asked)."""

    def pending_command(self, ledger: Any, target: str) -> Any: ...


@dataclass(frozen=True)
class Asked:
    """One request: its step, the hash of its command and checkpoint (None: the command cannot
    be rendered, so no hash binds it), and when it was asked."""

    step: str | None
    hash: str | None
    since: str | None


def asked_now(controller: Renders, ledger: Any, name: str | None) -> Asked | None:
    """What `name` asks in `ledger`, or None when it awaits no approval (or is gone)."""
    if name is None:
        return None
    target = ledger.targets.get(name)
    if target is None or target.state != "awaiting_approval":
        return None
    try:
        digest: str | None = controller.pending_command(ledger, name).hash
    except HandoffError:
        digest = None  # a reject needs no command: it is bound to the step alone
    return Asked(target.awaiting, digest, target.awaiting_since)
