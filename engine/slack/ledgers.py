"""The ledgers `handoff slack` watches, and what each target's request is now.

Each ledger gets a short key (a hash of where it lives) that buttons and modals carry,
its own writable handle (engine.api, actor `handoff-slack`) for reading and for the
journal records of refusals, and its Slack state (engine.slack.state).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from engine.api import HandoffError, Ledger, LedgerHandle, checkpoint_drift, describe_request, redact
from engine.codec.timefmt import parse_iso
from engine.slack.blocks import Request
from engine.slack.retry import Held
from engine.slack.state import State

ACTOR = "handoff-slack"


@dataclass
class Watched:
    """One watched ledger."""

    location: str
    key: str
    handle: LedgerHandle
    state: State
    held: Held = field(default_factory=Held)  # messages Slack refused, tried again less and less often

    @classmethod
    def open(cls, location: str) -> Watched:
        where = location if location.startswith(("postgresql://", "postgres://")) else os.path.realpath(location)
        key = hashlib.sha256(where.encode()).hexdigest()[:12]
        handle = LedgerHandle(location, actor=ACTOR)
        handle.load()
        return cls(location, key, handle, State(location))

    def channel(self, ledger: Ledger) -> str | None:
        """The channel of the ledger's first `notify: [{slack: {channel: ...}}]` entry."""
        return next((n.slack.channel for n in ledger.notify if n.slack is not None), None)


def message_key(name: str, step: str, since: str | None) -> str:
    """One request message per asking: target, step and when it started waiting."""
    return f"{name}|{step}|{since or '-'}"


def request(w: Watched, ledger: Ledger, name: str) -> Request | None:
    """`name`'s approval request now, as people may see it (redacted), or None when it awaits none."""
    t = ledger.targets.get(name)
    if t is None or t.state != "awaiting_approval" or not t.awaiting:
        return None
    try:
        pending = w.handle.pending_command(ledger, name)
    except HandoffError:
        return None  # a template that cannot render: `handoff check` says why; nothing to approve here
    patterns = ledger.redact
    invariants = [(s.label, redact(s.text, patterns), redact(str(s.value), patterns)) for s in w.handle.invariants(ledger)]
    drifted = checkpoint_drift(t)
    return Request(ledger_key=w.key, task=redact(ledger.task, patterns), target=name, step=pending.step.name,
                   argv=[redact(a, patterns) for a in pending.argv], checkpoint=redact(pending.checkpoint or "", patterns) or None,
                   hash=pending.hash, asked_by=t.awaiting_by, since=t.awaiting_since, environment=ledger.environment,
                   invariants=invariants, revision=ledger.revision, policy=describe_request(ledger, name, w.handle.ledger_dir, w.handle.journal),
                   drift=redact(drifted, patterns) if drifted else None)


def approved_by(ledger: Ledger, name: str, step: str, digest: str, since: str | None) -> str | None:
    """`approved by alice at ..., hash ...` when `step` on `name` holds an approval of `digest`
    given since the request started; else None."""
    t = ledger.targets.get(name)
    if t is None:
        return None
    start = parse_iso(since) or 0
    found = [a for a in t.approvals if a.step == step and a.hash == digest and (parse_iso(a.at) or 0) >= start - 1]
    if not found:
        return None
    return "; ".join(f"approved by {a.by} at {a.at}" + (" from Slack" if a.via == "slack" else "") for a in found) + \
        f", hash {digest}"


def stands(ledger: Ledger, name: str, step: str, since: str | None) -> bool:
    """Does the request a message was posted for stand still: `name` awaits `step`, asked at `since`
    (its message is then never closed for good, whatever it says for now)?"""
    t = ledger.targets.get(name)
    return t is not None and t.state == "awaiting_approval" and t.awaiting == step and t.awaiting_since == since


def outcome(ledger: Ledger, name: str, step: str, digest: str, since: str | None) -> str:
    """What became of a request that no longer stands as it was posted."""
    done = approved_by(ledger, name, step, digest, since)
    if done:
        return done
    t = ledger.targets.get(name)
    if t is None:
        return f"{name} is no longer in the ledger"
    if t.state == "blocked":
        return f"not approved: {name} is blocked: {t.reason or 'no reason given'}"
    if stands(ledger, name, step, since):  # `request` found no command to show: it cannot be rendered now
        return (f"the command of {step} cannot be shown now (`handoff check` says why), so it cannot be approved "
                "here; this message shows the request again once it can be")
    return f"no longer awaiting approval: {name} is {t.state}"
