"""The tools a planning model may call: a stable contract (names and input fields exactly).

  run_step {target, step, reason}   propose one runbook step; the guard decides
  read_target {target}              one target's record, evidence and journal lines
  write_handoff_note {text}         the model's handoff note (reviewed before it is stored)
  end_session {reason}              done for now: the session hands off and ends

`check_call` turns a tool call into its arguments or into the error text its tool result
carries (an unknown tool, a missing or non-string field): a malformed call is answered,
never a crash. The system prompt and these definitions carry `cache_control`, so turns
after the first read them from the prompt cache.
"""

from __future__ import annotations

from typing import Any

CACHE = {"type": "ephemeral"}


def _schema(**fields: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": about} for name, about in fields.items()},
        "required": list(fields),
    }


TOOLS: list[dict[str, Any]] = [
    {
        "name": "run_step",
        "description": (
            "Propose running one runbook step on one target. The engine's guard decides, outside you: the "
            "result is `started: ...`, `refused: <guard reason>` or `awaiting approval: <who was paged>`. "
            "An irreversible step without a valid human approval is never run: proposing it asks a human "
            "(the target becomes awaiting_approval and its owner is paged). A refusal is final for now; do "
            "not argue with it or repeat it in the same turn."
        ),
        "input_schema": _schema(target="the target's name, exactly as in the brief",
                                step="the runbook step's name, exactly as in the brief",
                                reason="one sentence: why this step, now (journaled for the operators)"),
    },
    {
        "name": "read_target",
        "description": "Read one target's full record, its last evidence and its recent journal lines (redacted).",
        "input_schema": _schema(target="the target's name"),
    },
    {
        "name": "write_handoff_note",
        "description": (
            "Write the handoff note for the next session and the next human: what is in flight, what waits on "
            "whom since when, what must not be touched and why (keep the previous note's rules that still "
            "apply), what comes next. Plain text, one fact a line, short. The engine checks it against the "
            "ledger and appends a Reviewer: section for anything missing or wrong."
        ),
        "input_schema": _schema(text="the whole note, plain text"),
    },
    {
        "name": "end_session",
        "description": (
            "Say you are done for now (nothing useful left that you may do). The engine lets running steps "
            "finish, asks you for the handoff note, releases the ledger and exits."
        ),
        "input_schema": _schema(reason="one sentence: why the session should end now"),
        "cache_control": CACHE,
    },
]
NAMES = tuple(tool["name"] for tool in TOOLS)


def check_call(name: str, data: Any) -> tuple[dict[str, str] | None, str]:
    """(arguments, "") for a well-formed call, or (None, what is wrong with it)."""
    tool = next((t for t in TOOLS if t["name"] == name), None)
    if tool is None:
        return None, f"error: there is no tool {name!r}; the tools are {', '.join(NAMES)}"
    if not isinstance(data, dict):
        return None, f"error: {name} takes an object with {', '.join(tool['input_schema']['required'])}"
    args: dict[str, str] = {}
    for field in tool["input_schema"]["required"]:
        value = data.get(field)
        if not isinstance(value, str) or not value.strip():
            return None, f"error: {name} needs {field!r} as a non-empty string (got {value!r:.80})"
        args[field] = value.strip() if field != "text" else value
    return args, ""
