"""Shared by the Claude planner tests: the fake Messages API, scripted models, a clean environment.

Sessions run as real `handoff resume --planner claude` processes; the real anthropic
SDK inside them talks HTTP to tests.fakes.messages_api through ANTHROPIC_BASE_URL. No
test reaches the real API: the environment is rebuilt without any ANTHROPIC_* variable
of the caller's, with HOME pointing at an empty folder (no SDK profile can be found).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from session_kit import ROOT, SPEED

from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.messages_script import message_text

# The scripted model's moves, as rules of the fake's script (tests.fakes.messages_script).
NOTE_ASK = "Call write_handoff_note with the handoff"
RESULT = r"\A(?:started|refused|awaiting approval|error|saved|ok)"
# The first "can move" line of the brief, unless the brief marks it "[not now: ...]".
FIRST_MOVE = r"Can move now \(\d+\):\n- (?P<t>\S+) \((?P<s>[^)]*)\): (?P<step>\S+) -> [^\[\n]*\n"


def tool_use(name: str, **data: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": data}


def note_rule(text: str, **extra: Any) -> dict[str, Any]:
    """Answer the session's request for its handoff note with `text`."""
    return {"id": "note", "match": {"last_user": NOTE_ASK}, "reply": {"content": [tool_use("write_handoff_note", text=text)]}, **extra}


def after_result_rule() -> dict[str, Any]:
    """After tool results, end the turn with a line of text."""
    return {"id": "after", "match": {"last_user": RESULT}, "reply": {"content": [{"type": "text", "text": "Done for this turn."}]}}


def follow_rule() -> dict[str, Any]:
    """Propose the brief's first movable step: a scripted model that follows the runbook."""
    return {"id": "move", "match": {"last_user": FIRST_MOVE},
            "reply": {"content": [{"type": "text", "text": "Next: {t}."},
                                  tool_use("run_step", target="{t}", step="{step}", reason="{t} is {s}; {step} is its next runbook step")]}}


def api(tmp: Path, rules: list[dict[str, Any]], **script: Any) -> FakeMessagesAPI:
    """A started fake API with these rules (stop it when done: it is a context manager)."""
    return FakeMessagesAPI({"rules": rules, **script}, tmp / "requests.jsonl").start()


def env(tmp: Path, fake: FakeMessagesAPI | None, world: Path | None = None, *, key: bool = True) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONUNBUFFERED="1",
                HANDOFF_SIM_WORLD=str(world or tmp / "world"), HANDOFF_SIM_SPEED=SPEED)
    if key:
        base["ANTHROPIC_API_KEY"] = "sk-test-not-a-real-key"
    # Without a fake, a closed local port: whatever a test does, no request leaves this machine.
    base["ANTHROPIC_BASE_URL"] = fake.url if fake is not None else "http://127.0.0.1:9"
    return base


def handoff(*args: str, environ: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], env=environ, capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT))


def start(*args: str, environ: dict[str, str], output: Path) -> subprocess.Popen:
    """`handoff ARGS` in its own process group, stdout and stderr to the file `output` (a pipe
    nobody reads while the test polls would fill up and stop the session mid-print)."""
    with open(output, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], env=environ, stdout=fh,
                                stderr=subprocess.STDOUT, cwd=str(ROOT), start_new_session=True)


def messages(fake: FakeMessagesAPI) -> list[dict[str, Any]]:
    """The logged /v1/messages requests."""
    return [r for r in fake.requests() if r["path"] == "/v1/messages"]


def last_user(request: dict[str, Any]) -> str:
    users = [m for m in request["body"]["messages"] if m["role"] == "user"]
    return message_text(users[-1])


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    content = request["body"]["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(content, list) else []


def assert_fresh_turns(requests: list[dict[str, Any]]) -> int:
    """No request carries a tool_use id that an earlier turn (another brief) produced.
    Returns how many tool_use ids were checked."""
    produced: dict[str, str] = {}
    checked = 0
    for r in requests:
        first = json.dumps(r["body"]["messages"][0])
        for message in r["body"]["messages"]:
            if message["role"] != "assistant" or not isinstance(message["content"], list):
                continue
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    assert produced.get(block["id"]) == first, f"request {r['n']} carries {block['id']} from another turn"
                    checked += 1
        for block in (r.get("reply") or {}).get("content", []):
            if block.get("type") == "tool_use":
                produced[block["id"]] = first
    return checked


def journal(ledger: Path) -> list[dict[str, Any]]:
    path = Path(str(ledger) + ".journal.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
