"""The script of the fake Messages API: which reply each request gets.

A script is JSON: `{"rules": [RULE, ...], "default": REPLY}`. For each request the first
rule whose `match` fits and whose `times` are not used up answers it; a request no rule
covers gets `default`, or a plain `end_turn` text (Claude Code sends such requests).

RULE: `{"id": "name", "match": MATCH, "times": N, "reply": REPLY}` (all but reply optional)

MATCH (every key given must fit; regexes are `re.search` with DOTALL):
  path         regex on the path; without it a rule answers `/v1/messages` only
  model        regex on the model
  system       regex on the system prompt's text
  last_user    regex on the last user message's text (its text blocks and tool results)
  first_user   regex on the first user message's text
  body         regex on the whole JSON body
  tool_choice  the name of the tool the request forces ("" for none forced)
  tool         the name of a tool the request offers
  stream       true or false
Named groups of the regexes fill `{name}` in the reply's strings.

REPLY is either an error, `{"status": 529, "error": {"type": ..., "message": ...},
"headers": {...}}` (429 and 529 carry `retry-after: 0` unless headers say otherwise), or a
message: `{"content": [BLOCK, ...], "stop_reason": ..., "usage": {...}}` where BLOCK is
`{"type": "text", "text": ...}`, `{"type": "tool_use", "name": ..., "input": {...}}` or
`{"type": "thinking", "thinking": ...}`. `stop_reason` defaults to `tool_use` when a tool is
used, else `end_turn`. `usage` fields not given are estimated (about 4 characters a token),
and a request whose tools or system carry `cache_control` reads its prefix from a simulated
prompt cache the second time the same prefix is sent (and writes it the first time).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
from typing import Any

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}
DEFAULT_REPLY = {"content": [{"type": "text", "text": "OK."}]}
_FILL = re.compile(r"\{(\w+)\}")


def message_text(message: dict[str, Any]) -> str:
    """The text of one message: its text blocks and the contents of its tool results."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            parts.append(inner if isinstance(inner, str) else message_text({"content": inner}))
    return "\n".join(parts)


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(block.get("text", "") for block in system or [])


def forced_tool(body: dict[str, Any]) -> str:
    choice = body.get("tool_choice") or {}
    return choice.get("name", "") if choice.get("type") == "tool" else ""


class Script:
    """The rules, with their use counts (thread-safe: the server answers in threads)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.rules = [dict(rule) for rule in data.get("rules", [])]
        self.default = data.get("default", DEFAULT_REPLY)
        self.used = [0] * len(self.rules)
        self.cache: set[str] = set()
        self.lock = threading.Lock()

    def choose(self, path: str, body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """(rule id, reply with `{name}` filled) for one request; counts the use."""
        with self.lock:
            for index, rule in enumerate(self.rules):
                times = rule.get("times")
                if times is not None and self.used[index] >= times:
                    continue
                groups = _match(rule.get("match", {}), path, body)
                if groups is None:
                    continue
                self.used[index] += 1
                return rule.get("id", f"rule {index + 1}"), _fill(copy.deepcopy(rule["reply"]), groups)
            return None, copy.deepcopy(self.default)

    def usage(self, body: dict[str, Any], content: list[dict[str, Any]], given: dict[str, Any] | None) -> dict[str, int]:
        """Token counts in the API's shape, estimated from the request unless given."""
        messages = len(json.dumps(body.get("messages", []))) // 4 + 1
        prefix = json.dumps([body.get("tools", []), body.get("system", "")], sort_keys=True)
        usage = {"input_tokens": messages, "output_tokens": len(json.dumps(content)) // 4 + 1,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if '"cache_control"' in prefix:
            key = hashlib.sha256(prefix.encode()).hexdigest()
            with self.lock:
                hit = key in self.cache
                self.cache.add(key)
            usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = len(prefix) // 4
        else:
            usage["input_tokens"] += len(prefix) // 4
        usage.update(given or {})
        return usage


def _match(match: dict[str, Any], path: str, body: dict[str, Any]) -> dict[str, str] | None:
    """The named groups if every condition fits, else None."""
    if "path" in match:
        if not re.search(match["path"], path):
            return None
    elif path != "/v1/messages":
        return None
    groups: dict[str, str] = {}
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    users = [m for m in messages if m.get("role") == "user"]
    texts = {
        "model": str(body.get("model", "")),
        "system": system_text(body),
        "last_user": message_text(users[-1]) if users else "",
        "first_user": message_text(users[0]) if users else "",
        "body": json.dumps(body, ensure_ascii=False),
    }
    for key, text in texts.items():
        if key in match:
            found = re.search(match[key], text, re.S)
            if not found:
                return None
            groups.update({k: v for k, v in found.groupdict().items() if v is not None})
    if "tool_choice" in match and forced_tool(body) != match["tool_choice"]:
        return None
    if "tool" in match and match["tool"] not in [t.get("name") for t in body.get("tools", [])]:
        return None
    if "stream" in match and bool(body.get("stream")) != bool(match["stream"]):
        return None
    return groups


def _fill(value: Any, groups: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _FILL.sub(lambda m: groups.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_fill(v, groups) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, groups) for k, v in value.items()}
    return value
