"""What Slack shows: the request message (Block Kit), the Review and Reject modals,
and the line that replaces the buttons once the request is decided.

Ledger text is data: it goes into `plain_text` objects, which Slack never formats; the
one exception, the argv in a code block (mrkdwn), has `&`, `<`, `>` escaped as Slack
asks and backticks swapped for a look-alike, so a value can neither close the block
nor make a link or a mention. Control characters are made visible (engine.codec.textsafe).

The argv is shown whole, one argument a line as engine.codec.textsafe.shell_word writes it,
over as many sections as it needs; one too long for Slack's limits is not shown at all,
the message says so, and it cannot be approved from Slack (engine.slack.decide).

A target whose checkpoint drifted gets the TUI's warning (engine.api.drift_line: the
mismatch, "Sessions refuse this target until it is reconciled; approve anyway?") in the
message and the Review modal, whose label and button then say "anyway"; the modal carries
a digest of the drift it showed (`d`), and the approval is bound to that drift
(engine.slack.decide, engine.ledger.drift).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from engine.api import drift_line, one_line, shell_word, visible

REVIEW, REJECT = "handoff_review", "handoff_reject"
APPROVE_VIEW, REJECT_VIEW = "handoff_approve", "handoff_reject_view"
CONFIRM_BLOCK, CONFIRM_INPUT = "confirm", "name"
REASON_BLOCK, REASON_INPUT = "reason", "text"


@dataclass(frozen=True)
class Request:
    """One target's approval request as the ledger says it now (all text already redacted)."""

    ledger_key: str
    task: str
    target: str
    step: str
    argv: list[str]
    checkpoint: str | None
    hash: str
    asked_by: str | None
    since: str | None
    environment: str | None
    invariants: list[tuple[str, str, str]]  # (status label, text, value)
    revision: int
    policy: str | None = None
    drift: str | None = None  # the target's recorded checkpoint drift (engine.api.checkpoint_drift), redacted

    def ref(self) -> str:
        """What a button carries: which request it is, as the person saw it."""
        return json.dumps({"l": self.ledger_key, "t": self.target, "s": self.step, "h": self.hash, "since": self.since},
                          separators=(",", ":"))


CODE_ROOM = 2900  # escaped characters of code in one section (Slack takes 3,000, with our label and fences)
CODE_SECTIONS = 40  # a message holds 50 blocks: the request's other blocks need at most 7 of them
COMMAND = "Command, exactly as it will run:"
TOO_LONG = ("This command is too long for Slack to show whole, so it cannot be approved from Slack: read it and "
            "approve it on a terminal with `handoff approve` or in the TUI.")


def text(value: object, width: int = 2900) -> dict[str, Any]:
    """A plain_text object: Slack never reads markup in it. A value cut to `width` ends in "…"."""
    value = visible(value) or " "
    return {"type": "plain_text", "text": value if len(value) <= width else value[:width - 1] + "\u2026", "emoji": False}


def _escaped(line: str) -> str:
    return mrkdwn(line).replace("`", "\u02cb")


def code(lines: list[str]) -> str:
    """Lines as one mrkdwn code block, escaped (see the module)."""
    return "```" + "\n".join(_escaped(line) for line in lines) + "```"


def _pieces(line: str) -> list[str]:
    """`line` cut where its escaped text would pass CODE_ROOM (never inside an escape)."""
    pieces, piece, used = [], "", 0
    for char in line:
        size = len(_escaped(char))
        if used + size > CODE_ROOM:
            pieces.append(piece)
            piece, used = "", 0
        piece += char
        used += size
    return [*pieces, piece]


def _chunks(argv: list[str]) -> list[tuple[bool, list[str]]]:
    """The argv's lines packed into code blocks of CODE_ROOM escaped characters: (whether the
    block goes on with the argument the block before it ended with, its lines)."""
    chunks: list[tuple[bool, list[str]]] = [(False, [])]
    used = 0  # escaped characters in the last block, with the newline before each line but its first
    for arg in argv:
        for n, piece in enumerate(_pieces(shell_word(arg))):
            size = len(_escaped(piece))
            if n or (chunks[-1][1] and used + 1 + size > CODE_ROOM):
                chunks.append((n > 0, []))
            used = used + 1 + size if chunks[-1][1] else size
            chunks[-1][1].append(piece)
    return chunks


def command(argv: list[str]) -> list[dict[str, Any]]:
    """The sections that show the argv whole (see the module), or the one that says it cannot."""
    chunks = _chunks(argv)
    if len(chunks) > CODE_SECTIONS:
        return [{"type": "section", "text": text(TOO_LONG)}]
    labels = [COMMAND] + ["(the same argument, continued)" if going_on else "(continued)" for going_on, _ in chunks[1:]]
    return [{"type": "section", "text": {"type": "mrkdwn", "text": f"{label}\n{code(lines)}"}}
            for label, (_, lines) in zip(labels, chunks, strict=True)]


def shown_whole(argv: list[str]) -> bool:
    """Whether Slack can show the argv whole; only then can it be approved from Slack."""
    return len(_chunks(argv)) <= CODE_SECTIONS


def drift_digest(drift: str | None) -> str | None:
    """What a Review modal carries of the drift it showed (None: it showed none)."""
    return hashlib.sha256(drift.encode()).hexdigest()[:16] if drift else None


def _drift_block(r: Request) -> list[dict[str, Any]]:
    """The TUI's drift warning, as plain text (none when the checkpoint did not drift)."""
    return [{"type": "section", "text": text(drift_line(r.drift))}] if r.drift else []


def _env_cue(environment: str | None) -> str:
    if environment and environment.lower().startswith("prod"):
        return f"\u26a0 {environment.upper()} (production)"
    return environment or "not stated"


def request_blocks(r: Request, *, outcome: str | None = None) -> list[dict[str, Any]]:
    """The request message; with `outcome` (approved by ..., expired, ...) it has no buttons."""
    head = f"Approval needed: {r.target} \u00b7 {r.step} (IRREVERSIBLE)" if outcome is None else f"{r.target} \u00b7 {r.step}"
    facts = [("Environment", _env_cue(r.environment)), ("Checkpoint", r.checkpoint or "-"),
             ("Asked by", r.asked_by or "-"), ("Since", r.since or "-"), ("Approval hash", r.hash),
             ("Ledger revision", str(r.revision))]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": text(head, 150)},
        {"type": "section", "text": text(f"Ledger: {r.task}")},
        {"type": "section", "fields": [text(f"{k}: {one_line(v, 200)}") for k, v in facts]},
        *(_drift_block(r) if outcome is None else []),
        *command(r.argv),
    ]
    if r.invariants:
        lines = [f"{label}: {one_line(t, 150)} ({one_line(v, 60)})" for label, t, v in r.invariants]
        blocks.append({"type": "section", "text": text("Invariants:\n" + "\n".join(lines))})
    if r.policy:
        blocks.append({"type": "section", "text": text(f"Policy: {r.policy}")})
    if outcome is None:
        review = [{"type": "button", "action_id": REVIEW, "style": "primary", "text": text("Review"), "value": r.ref()}]
        blocks.append({"type": "actions", "block_id": "decide", "elements": [
            *(review if shown_whole(r.argv) else []),
            {"type": "button", "action_id": REJECT, "style": "danger", "text": text("Reject"), "value": r.ref()},
        ]})
    else:
        blocks.append({"type": "section", "text": text(outcome)})
    return blocks


def mrkdwn(value: str) -> str:
    """Ledger text for a message's top-level `text`: `&`, `<` and `>` escaped (Slack reads them
    even with `mrkdwn: false`), so `<!channel>`, `<@U0...>` or `<http://x|click>` stay text."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fallback(r: Request, outcome: str | None = None) -> str:
    """The message's `text` (notifications, screen readers): one line, escaped (mrkdwn), posted
    with `mrkdwn: false` so `*`, `_`, `~` and backticks in ledger text format nothing."""
    return mrkdwn(one_line(f"[{r.task}] {r.target}: {r.step} " + (outcome or f"awaits approval (hash {r.hash})"), 300))


def reminder(r: Request, due: int, waited: str) -> str:
    """A reminder in the request's thread (no blocks): one line, escaped, posted with `mrkdwn: false`
    (ledger text is never markup)."""
    return mrkdwn(one_line(f"reminder {due}: {r.target}: {r.step} still awaits approval ({waited}); hash {r.hash}", 300))


def shown_digest(r: Request, outcome: str | None) -> str:
    """What the message shows, minus the revision: a write to another target never edits it."""
    data = json.dumps([r.target, r.step, r.argv, r.checkpoint, r.hash, r.asked_by, r.since, r.environment, r.invariants,
                       r.policy, outcome] + ([r.drift] if r.drift else []), ensure_ascii=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def approve_view(r: Request, *, channel: str | None, ts: str | None) -> dict[str, Any]:
    """The Review modal: the command and hash again, and the target's name to type (as the TUI asks)."""
    meta = {"l": r.ledger_key, "t": r.target, "s": r.step, "h": r.hash, "rev": r.revision, "c": channel, "ts": ts,
            "d": drift_digest(r.drift)}
    anyway = " anyway" if r.drift else ""
    return {
        "type": "modal", "callback_id": APPROVE_VIEW, "private_metadata": json.dumps(meta, separators=(",", ":")),
        "title": text("Approve step", 24), "submit": text(f"Approve{anyway}", 24), "close": text("Cancel", 24),
        "blocks": [
            {"type": "section", "text": text(f"{r.target}: {r.step} (IRREVERSIBLE) in {_env_cue(r.environment)}")},
            *_drift_block(r),
            *command(r.argv),
            {"type": "section", "fields": [text(f"Checkpoint: {r.checkpoint or '-'}"), text(f"Approval hash: {r.hash}"),
                                           text(f"Ledger revision: {r.revision}")]},
            {"type": "input", "block_id": CONFIRM_BLOCK, "label": text(f"Type {r.target} to approve it{anyway}", 150),
             "element": {"type": "plain_text_input", "action_id": CONFIRM_INPUT}},
        ],
    }


def reject_view(r: Request, *, channel: str | None, ts: str | None) -> dict[str, Any]:
    """The Reject modal: why (the target is blocked with it)."""
    meta = {"l": r.ledger_key, "t": r.target, "s": r.step, "h": r.hash, "rev": r.revision, "c": channel, "ts": ts}
    return {
        "type": "modal", "callback_id": REJECT_VIEW, "private_metadata": json.dumps(meta, separators=(",", ":")),
        "title": text("Reject step", 24), "submit": text("Reject", 24), "close": text("Cancel", 24),
        "blocks": [
            {"type": "section", "text": text(f"{r.target}: {r.step} will not run; the target is blocked with your reason.")},
            {"type": "input", "block_id": REASON_BLOCK, "label": text("Why", 150),
             "element": {"type": "plain_text_input", "action_id": REASON_INPUT, "multiline": True}},
        ],
    }


def said(message: str) -> list[dict[str, Any]]:
    """What a person is told privately, as a plain_text block: chat.postEphemeral has no `mrkdwn: false`."""
    return [{"type": "section", "text": text(message)}]


def typed(payload: dict[str, Any], block: str, action: str) -> str:
    """What the person typed into a modal's input."""
    values = ((payload.get("view") or {}).get("state") or {}).get("values") or {}
    return str(((values.get(block) or {}).get(action) or {}).get("value") or "")
