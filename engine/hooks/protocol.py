"""`handoff hook EVENT --ledger LEDGER`: read Claude Code's JSON, answer with a decision.

Exit 0 with one JSON object on stdout, always: Claude Code reads a decision from it.
Unknown extra input fields are ignored. An internal error never shows a traceback: the
hook answers by refusing (a denied tool call, a blocked stop, a session-start context
that says the ledger could not be read), says why, and journals it when it can.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from engine.errors import HandoffError
from engine.hooks.deadline import TooSlow


def _handler(event: str) -> Callable:
    """The handler of `event`, importing only its own module (the hook runs on every tool call)."""
    if event == "pre-tool-use":
        from engine.hooks.pre_tool import pre_tool_use

        return pre_tool_use
    if event == "post-tool-use":
        from engine.hooks.post_tool import post_tool_use

        return post_tool_use
    if event in ("stop", "stop-failure"):
        from engine.hooks import stop

        return stop.stop if event == "stop" else stop.stop_failure
    from engine.hooks import events

    return {"session-start": events.session_start, "pre-compact": events.pre_compact, "session-end": events.session_end}[event]


def failed(event: str, why: str, data: dict[str, Any], then: str = "refused until the ledger can be read") -> dict[str, Any]:
    """The fail-closed answer of `event` when the hook itself could not decide (`then`: what
    the agent is told of a denied tool call)."""
    text = f"handoff hook {event} could not check this against the ledger: {why}"
    if event == "pre-tool-use":
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": f"{text}; {then}"}}
    if event == "stop":
        return {} if data.get("stop_hook_active") else {"decision": "block", "reason": text + "; fix that, then stop"}
    if event == "session-start":
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text
                                       + ". Do not act on the ledger until `handoff status` works."}}
    return {"systemMessage": text}


def run(event: str, ledger: str, stdin: TextIO, stdout: TextIO) -> int:
    """Answer one hook call; returns the exit code (0)."""
    data: dict[str, Any] = {}
    try:
        raw = stdin.read()
        parsed = json.loads(raw) if raw.strip() else {}
        data = parsed if isinstance(parsed, dict) else {}
        from engine.hooks.context import HookContext

        answer = _handler(event)(HookContext(event, ledger, data))
    except TooSlow:
        from engine.hooks import TIMEOUTS

        why = f"it could not decide within {TIMEOUTS[event] * 2 / 3:.0f} s (Claude Code would then run the call unjudged)"
        answer = failed(event, why, data, "refused: run it in smaller parts (a glob over fewer files, one command a call)")
        _journal_failure(event, ledger, why)
    except HandoffError as err:
        from engine.audit.redact import redact  # a failing call only: an answer's reason never shows a secret

        answer = failed(event, redact(str(err)), data)
        _journal_failure(event, ledger, str(err))
    except Exception as err:  # noqa: BLE001 - fail closed: a hook must answer, never crash Claude Code's call
        from engine.audit.redact import redact

        answer = failed(event, f"internal error {type(err).__name__}: {redact(str(err))}", data)
        import traceback

        _journal_failure(event, ledger, "".join(traceback.format_exception_only(err)).strip())
    stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    stdout.flush()
    return 0


def _journal_failure(event: str, ledger: str, why: str) -> None:
    from engine.audit.redact import redact

    try:
        from engine.approvals.identity import os_user
        from engine.ledger.access import open_writer

        writer = open_writer(ledger)
        if not writer.read_only:
            writer.journal.append("hook_error", f"handoff hook {event} failed closed: {why}", actor="handoff-hook",
                                  user=os_user())
    except Exception as err:  # noqa: BLE001 - the ledger itself may be what failed; the answer is already refusing
        print(f"handoff hook: could not journal the failure either: {redact(str(err))}", file=sys.stderr)
