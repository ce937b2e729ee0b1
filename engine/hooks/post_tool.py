"""post-tool-use: one journal record of each tool call a Claude Code session made.

It runs after every tool call, so it pays only for the record: the lease's heartbeat
and the journal's append, with the redaction patterns of the hook's facts
(engine.hooks.context). While those facts stand and this session holds the lease, it
never loads the model or the store.
"""

from __future__ import annotations

from typing import Any

from engine.codec.textsafe import visible
from engine.hooks.context import HookContext


def post_tool_use(ctx: HookContext) -> dict[str, Any]:
    tool = str(ctx.data.get("tool_name") or "?")
    given = ctx.data.get("tool_input")
    given = given if isinstance(given, dict) else {}
    what = given.get("command") or given.get("file_path") or given.get("pattern") or given.get("url") or ""
    response = ctx.data.get("tool_response")
    outcome = "done"
    if isinstance(response, dict):
        if response.get("interrupted"):
            outcome = "interrupted"
        elif response.get("is_error") or response.get("error"):
            outcome = "error"
    shown = visible(" ".join(str(what).split()))
    shown = shown if len(shown) <= 160 else shown[:159] + "…"
    ctx.touch_lease()
    ctx.say("tool_use", f"claude code: {tool} {shown} -> {outcome}".strip(), tool=tool, outcome=outcome)
    return {}
