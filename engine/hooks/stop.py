"""stop: a Claude Code session that changed the ledger ends with a true handoff note.

When the ledger changed during this Claude Code session (the journal holds changes after
its `claude_session_start`) and the handoff note is older than the last of them, or
fails the deterministic review against the ledger (engine.audit.review), the stop is blocked
once, with what is missing and how to write it. When Claude Code says the stop hook is
already active, the stop is never blocked again: if the note still fails, the engine
writes its own note (generated from the ledger), journals it, and lets the session stop.

stop-failure: a turn that ended on an API error fires Claude Code's StopFailure instead
of Stop (its answer is ignored): the engine writes its note on the same terms and gives
the lease back.
"""

from __future__ import annotations

from typing import Any

from engine.approvals.identity import os_user
from engine.audit.review import amend, review
from engine.hooks.context import HookContext
from engine.lease import leasing
from engine.ledger import ops
from engine.session.handoff_note import generate

# Journal kinds that mean the ledger's work moved on (a note written before them is old).
CHANGES = frozenset({"step_start", "transition", "gate", "discrepancy", "drift", "reconcile", "retry", "block",
                     "rejection", "approval", "unapproval", "pause", "unpause", "external_edit", "removal_accepted",
                     "rollback_accepted"})
NOTE_AT_START_CHARS = 8000


def stop(ctx: HookContext) -> dict[str, Any]:
    ctx.touch_lease()
    start, problems = _note_problems(ctx)
    if not problems or start is None:  # problems come only with a start record
        return {}
    if not ctx.data.get("stop_hook_active"):
        ctx.say("stop_blocked", f"the stop of Claude Code session {ctx.session_id} was held for its handoff note: "
                + "; ".join(problems), problems=problems)
        return {"decision": "block", "reason": _ask(ctx, problems)}
    _write_engine_note(ctx, start)
    return {}


def stop_failure(ctx: HookContext) -> dict[str, Any]:
    """A turn that ended on an API error (Claude Code fires StopFailure instead of Stop, and
    ignores the answer): the model cannot write the note now, so the engine writes its own
    when the session's note is missing or not current, and gives the lease back (the
    session's next hook call takes it again if nobody else did)."""
    error = str(ctx.data.get("error") or "unknown")
    details = str(ctx.data.get("error_details") or "")
    start, problems = _note_problems(ctx)
    if problems and start is not None and not ctx.writer.read_only:
        _write_engine_note(ctx, start, ending=f"the Claude Code session's turn ended on an API error ({error})")
    released = leasing.release(ctx.store, ctx.session_id) if ctx.session_id and not ctx.writer.read_only else None
    ctx.say("claude_stop_failure", f"Claude Code session {ctx.session_id}'s turn ended on an API error ({error}"
            + (f": {details[:200]}" if details else "") + ")" + ("; the engine wrote the handoff note" if problems else "")
            + ("; lease released" if released is not None else ""), error=error, rev=released)
    return {}


def _note_problems(ctx: HookContext) -> tuple[dict | None, list[str]]:
    """(the session's start record, what is wrong with the note): no problems when the
    session never started under the hooks, changed nothing, or left a current note."""
    start = ctx.writer.journal.last_of("claude_session_start", session=ctx.session_id) if ctx.session_id else None
    if start is None:
        return None, []  # a session the hooks never saw start: nothing to hold it to
    records = [r for r in ctx.writer.journal.read(start["seq"])[0] if r.get("seq", 0) > start["seq"]]
    changes = [r["seq"] for r in records if r.get("kind") in CHANGES]
    if not changes:
        return start, []  # nothing moved: the note the session found still stands
    notes = [r["seq"] for r in records if r.get("kind") == "note"]
    problems = []
    if not notes or max(notes) < max(changes):
        problems.append("the handoff note is older than this session's last change to the ledger")
    note = ctx.ledger.handoff_note or ""
    problems += review(note, ctx.ledger, previous=start.get("note_at_start"), since=start.get("ts")) if note.strip() else []
    if not note.strip():
        problems.append("there is no handoff note")
    return start, problems


def _ask(ctx: HookContext, problems: list[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    return (f"Before you stop, write the handoff note for the next shift; the ledger changed and the note does not "
            f"say so yet:\n{listed}\nWrite it with Bash: `handoff note {ctx.ledger_path} --set - <<'NOTE'` followed by "
            "the note and a line `NOTE`. Name every target in flight, awaiting approval, failed or blocked, what "
            "waits on whom, and what must not be touched (keep the earlier note's \"do not\" rules that still hold).")


def _write_engine_note(ctx: HookContext, start: dict,
                       ending: str = "the Claude Code session stopped without writing a current handoff note") -> None:
    who = ops.Who(ctx.identity, os_user())

    def fn(ledger):
        text = generate(ledger, ledger_path=ctx.ledger_path, ending=ending, session=ctx.session_id,
                        previous=start.get("note_at_start"))
        text = amend(text, review(text, ledger, previous=start.get("note_at_start"), since=start.get("ts")))
        return ops.set_note(ledger, who, text, base=None)

    records, rev = ctx.store.transact(fn)
    for record in records:
        record = dict(record)
        kind, msg = record.pop("kind"), record.pop("msg")
        record.pop("target", None)
        ctx.say(kind, msg, rev=rev, **record)
    ctx.say("note_forced", f"the engine wrote the handoff note for Claude Code session {ctx.session_id}: its own note "
            "was missing, older than its changes, or failed the review", rev=rev)
