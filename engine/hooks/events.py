"""session-start, pre-compact and session-end (pre-tool-use, post-tool-use and stop have
modules of their own)."""

from __future__ import annotations

import json
from typing import Any

from engine.hooks.context import HookContext
from engine.lease import leasing
from engine.ledger.invariants import evaluate, journal_readings
from engine.planners.brief import BriefContext, build

LONG_STEP = 600  # seconds: the Bash tool stops a command after 10 minutes

HOW_TO_ACT = """\
HOW TO WORK ON THIS LEDGER (it is your only memory; a summary of this conversation is not):
- Run every runbook step as `handoff run {ledger} TARGET [STEP]`, never its command directly: the
  engine's guard checks it, records it, and pages a person for an irreversible step that needs an
  approval (exit 1 then says who was paged). Exit codes: 0 ran ok, 1 nothing ran (refused, or now
  awaiting approval), 2 usage or no single step allowed, 3 ledger and reality disagree, 4 paused,
  5 someone else holds the lease, 7 it ran and failed.
- A step whose timeout is over 10 minutes{long}: run `handoff run` with Bash `run_in_background: true`.
- Look with `handoff status {ledger}` (add --json for details); read the audit trail with
  `handoff journal {ledger}`.
- Never edit {ledger} or the files beside it; the engine writes them.
- Before you stop, write the handoff note for the next shift: `handoff note {ledger} --set -` with the
  note on stdin (what is in flight, what waits on whom, what must not be touched)."""


def session_start(ctx: HookContext) -> dict[str, Any]:
    source = str(ctx.data.get("source") or "startup")
    other = ctx.touch_lease()
    ledger = ctx.ledger
    statuses = evaluate(ledger, journal_readings(ctx.writer.journal))
    brief = build(ledger, BriefContext(ledger_path=ctx.ledger_path, session=ctx.session_id, statuses=statuses))
    long_steps = [s.name for s in ledger.steps() if (s.timeout or 0) > LONG_STEP]
    parts = [brief, "", HOW_TO_ACT.format(ledger=ctx.ledger_path,
                                         long=f" ({', '.join(long_steps)} here)" if long_steps else "")]
    if other is not None:
        parts.append(f"\nANOTHER HOLDER DRIVES THIS LEDGER NOW: {other.detail}. You may read and investigate; "
                     "`handoff run` exits 5 until it hands off.")
    if source == "compact":
        parts.append("\nThe conversation was just compacted: trust the ledger above, not the summary, for what "
                     "is done, in flight or waiting.")
        if _note_is_stale(ctx):
            parts.append("THE LEDGER CHANGED SINCE THE HANDOFF NOTE WAS WRITTEN: write the note first "
                         f"(`handoff note {ctx.ledger_path} --set -`), then go on.")
    ctx.say("claude_session_start", f"Claude Code session {ctx.session_id} started ({source}); grounded in the ledger "
            f"at revision {ledger.revision}", source=source, rev=ledger.revision,
            note_at_start=(ledger.handoff_note or "")[:8000] or None)
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "\n".join(parts)}}


def _note_is_stale(ctx: HookContext) -> bool:
    note = ctx.writer.journal.last_of("note")
    return note is None or (note.get("rev") or 0) < ctx.ledger.revision - 1


def pre_compact(ctx: HookContext) -> dict[str, Any]:
    trigger = str(ctx.data.get("trigger") or "auto")
    ctx.touch_lease()
    ctx.say("compaction", f"Claude Code session {ctx.session_id} compacts its conversation ({trigger}); "
            "the next session start re-grounds it in the ledger", trigger=trigger)
    return {"systemMessage": "The ledger is the memory: the summary need not restate which targets are done, "
                             "in flight or waiting; the next turn starts from the ledger itself."}


def session_end(ctx: HookContext) -> dict[str, Any]:
    released = leasing.release(ctx.store, ctx.session_id) if ctx.session_id and not ctx.writer.read_only else None
    reason = str(ctx.data.get("reason") or "")
    ctx.say("claude_session_end", f"Claude Code session {ctx.session_id} ended ({reason or 'no reason given'})"
            + ("; lease released" if released is not None else ""), reason=reason or None, rev=released)
    return {}


def dumps(answer: dict[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False)
