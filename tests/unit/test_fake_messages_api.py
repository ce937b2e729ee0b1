"""The fake Messages API speaks the real API's shapes: the real anthropic SDK parses all of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest
from claude_kit import tool_use
from session_kit import ROOT

from tests.fakes.messages_api import FakeMessagesAPI

TOOLS = [{"name": "run_step", "description": "propose a step", "cache_control": {"type": "ephemeral"},
          "input_schema": {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}}]
SCRIPT = {"rules": [
    {"id": "move", "match": {"last_user": r"move (?P<t>db-\d+)"},
     "reply": {"content": [{"type": "thinking", "thinking": "lag is low"}, {"type": "text", "text": "Moving {t}."},
                           tool_use("run_step", target="{t}", note="quotes \" and {braces}")]}},
    {"id": "busy", "match": {"last_user": "overloaded"}, "times": 1, "reply": {"status": 529}},
    {"id": "limited", "match": {"last_user": "limited"}, "reply": {"status": 429}},
    {"id": "count", "match": {"path": "count_tokens$"}, "reply": {"input_tokens": 1234}},
]}


@pytest.fixture
def fake(tmp_path: Path):
    with FakeMessagesAPI(SCRIPT, tmp_path / "log.jsonl") as api:
        yield api


def client(fake: FakeMessagesAPI, retries: int = 2) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url, api_key="sk-test-not-a-real-key", max_retries=retries)


def test_non_streaming_tool_use_with_thinking_and_cache(fake: FakeMessagesAPI) -> None:
    """A scripted reply fills named groups; usage shows a cache write, then a cache read of the same prefix."""
    c = client(fake)
    ask = {"model": "claude-test", "max_tokens": 100, "tools": TOOLS, "messages": [{"role": "user", "content": "please move db-19"}]}
    first = c.messages.create(**ask)
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use"]
    assert first.content[1].text == "Moving db-19."
    assert first.content[2].input == {"target": "db-19", "note": 'quotes " and {braces}'}
    assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    second = c.messages.create(**ask)
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.content[2].id != first.content[2].id


def test_streaming_gives_the_same_message(fake: FakeMessagesAPI) -> None:
    """Server-sent events in the API's order accumulate to the same content (tool input split in two)."""
    with client(fake).messages.stream(model="claude-test", max_tokens=100, tools=TOOLS,
                                      messages=[{"role": "user", "content": "move db-21"}]) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert final.stop_reason == "tool_use" and final.content[2].input["target"] == "db-21"
    assert final.content[0].thinking == "lag is low" and final.usage.output_tokens > 1
    logged = fake.requests()[-1]
    assert logged["stream"] is True and logged["rule"] == "move"


def test_unscripted_beta_and_count_tokens(fake: FakeMessagesAPI) -> None:
    """A request no rule covers gets a plain end_turn text, with ?beta=true too; count_tokens answers."""
    c = client(fake)
    beta = c.beta.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hello"}],
                                  extra_query={"beta": "true"})
    assert beta.stop_reason == "end_turn" and beta.content[0].text == "OK."
    assert c.messages.count_tokens(model="claude-test", messages=[{"role": "user", "content": "hi"}]).input_tokens == 1234
    log = fake.requests()
    assert log[0]["query"] == {"beta": "true"} and log[0]["rule"] is None
    assert log[1]["path"] == "/v1/messages/count_tokens" and log[1]["rule"] == "count"
    assert all(entry["auth"] in ("bearer", "x-api-key") for entry in log)
    assert "sk-test-not-a-real-key" not in (Path(fake.log).read_text())


def test_529_and_429_carry_retry_after_and_the_sdk_retries(fake: FakeMessagesAPI) -> None:
    """529 once, then the same request succeeds on the SDK's retry; 429 every time raises RateLimitError."""
    c = client(fake, retries=1)
    assert c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "overloaded"}]).content[0].text == "OK."
    with pytest.raises(anthropic.RateLimitError):
        c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "limited"}])
    statuses = [(e["rule"], e["status"]) for e in fake.requests()]
    assert statuses == [("busy", 529), (None, 200), ("limited", 429), ("limited", 429)]


def test_runs_as_a_module_and_prints_its_port(tmp_path: Path) -> None:
    """`python -m tests.fakes.messages_api --port 0 --script FILE` prints the port and serves."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.messages_api", "--port", "0", "--script", str(script)],
                            cwd=str(ROOT), stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        c = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0)
        reply = c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "move db-7"}])
        assert reply.content[2].input["target"] == "db-7"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
    logged = [json.loads(line) for line in Path(f"{script}.requests.jsonl").read_text().splitlines()]
    assert [e["rule"] for e in logged] == ["move"]
