"""A Claude session told to stop while the model's API hangs stops at once; the note's request fits the token budget.

Real `handoff resume --planner claude` processes, the real anthropic SDK, the fake
Messages API made to hang (a request held unanswered until the fake stops). "At once"
is proved by events, not a clock: the session exits while the fake still holds its
first request unanswered, so it neither waited for the answer nor retried.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from claude_kit import NOTE_ASK, after_result_rule, api, env, handoff, journal, messages, start, tool_use
from session_kit import load, tool, tool_ledger, wait_for

STEPS = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "check", "{target}")}]
FLEET = {"a": {"state": "queued"}, "b": {"state": "queued"}}
HANG = [{"id": "hang", "match": {"body": "."}, "reply": {"hang": 600}}]


def _hung_session(tmp_path: Path):
    ledger = tool_ledger(tmp_path, STEPS, FLEET)
    fake = api(tmp_path, HANG)
    environ = env(tmp_path, fake)
    proc = start("resume", "--ledger", str(ledger), "--planner", "claude", environ=environ, output=tmp_path / "claude.out")
    wait_for(lambda: any(r.get("hung") for r in messages(fake)), timeout=60, what="the first request to hang")
    return ledger, fake, environ, proc


def _assert_stopped_without_waiting(tmp_path: Path, ledger: Path, fake, proc, code: int) -> None:
    try:
        assert proc.wait(60) == code, (tmp_path / "claude.out").read_text()
        held = messages(fake)
        assert len(held) == 1 and held[0]["hung"] and held[0]["status"] is None  # never answered, never retried
    finally:
        fake.stop()
    data = load(ledger)
    assert data.get("session") is None  # the lease is released
    assert data["handoff_note"].startswith("Session ")  # the engine's own note
    out = (tmp_path / "claude.out").read_text()
    assert "stopped waiting on the model" in out
    assert "the engine writes its own handoff note" in out
    assert journal(ledger)[-1]["kind"] == "session_end"


def test_handoff_stop_is_honoured_while_the_model_hangs(tmp_path: Path) -> None:
    ledger, fake, environ, proc = _hung_session(tmp_path)
    try:
        result = handoff("stop", str(ledger), environ=environ)
        assert result.returncode == 0, result.stdout + result.stderr
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        fake.stop()
        raise
    _assert_stopped_without_waiting(tmp_path, ledger, fake, proc, 0)


def test_sigterm_is_honoured_while_the_model_hangs(tmp_path: Path) -> None:
    ledger, fake, _environ, proc = _hung_session(tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    _assert_stopped_without_waiting(tmp_path, ledger, fake, proc, 0)


def test_the_note_request_is_reserved_inside_the_token_budget(tmp_path: Path) -> None:
    """4,000 tokens, each request 1,100: after two the turn stops proposing (2,200 used + the note's 1,000 input and
    1,024 output reserved would pass 4,000, though 55% is below the 75% hand-off point), and the note is asked
    for with max_tokens that keep the total inside the budget."""
    ledger = tool_ledger(tmp_path, STEPS, FLEET)
    spend = {"input_tokens": 1000, "output_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    rules = [{"id": "go", "match": {"last_user": r"\ALEDGER "}, "times": 1,
              "reply": {"content": [tool_use("run_step", target="a", step="check", reason="a is queued")], "usage": spend}},
             {"id": "note", "match": {"last_user": NOTE_ASK},
              "reply": {"content": [tool_use("write_handoff_note", text="a is checked; b is queued.")],
                        "usage": {**spend, "output_tokens": 50}}},
             {**after_result_rule(), "reply": {"content": [tool_use("run_step", target="b", step="check", reason="b")],
                                               "usage": spend}}]
    with api(tmp_path, rules) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", "--max-tokens", "4000",
                         environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["rule"] for r in requests] == ["go", "after", "note"]
    assert "1 tool call(s) of the planner not acted on" in result.stdout  # b's check was proposed, not started
    assert requests[-1]["body"]["max_tokens"] == 4000 - 2200 - 1000
    usage = [r for r in journal(ledger) if r["kind"] == "planner_usage"]
    assert usage[-1]["tokens_used"] <= 4000
    assert load(ledger)["handoff_note"] == "a is checked; b is queued."
