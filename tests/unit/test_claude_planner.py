"""`handoff resume --planner claude`: real sessions, the real anthropic SDK, a scripted fake model.

The model proposes; the guard decides; the engine writes. Every test here runs the CLI
as a subprocess against tests.fakes.messages_api (never the real API).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from claude_kit import (
    after_result_rule,
    api,
    assert_fresh_turns,
    env,
    follow_rule,
    handoff,
    journal,
    last_user,
    messages,
    note_rule,
    start,
    tool_results,
    tool_use,
)
from session_kit import counts, demo_copy, load, tool, tool_ledger, wait_for

INVARIANTS = ["never run cutover on a db whose state != verified", "never touch more than 2 dbs concurrently"]
STEPS = [
    {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "check", "{target}")},
    {"name": "link", "from": "checked", "to": "replicating", "reversible": False, "run": tool("say", "link", "{target}")},
    {"name": "sync", "from": "replicating", "to": "verified", "reversible": True, "run": tool("sleep", "1")},
    {"name": "cutover", "from": "verified", "to": "done", "reversible": False, "run": tool("say", "cutover", "{target}")},
]
FLEET = {"a": {"state": "queued"}, "b": {"state": "replicating"}, "c": {"state": "replicating"}, "d": {"state": "checked"}}
FIRST_TURN = {"last_user": r"\ALEDGER "}  # a turn's first request: its only message is the brief


def ran(ledger: Path) -> list[list[str]]:
    log = ledger.parent / "argv.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_no_credential_exits_2_before_anything_is_written(tmp_path: Path) -> None:
    """Without ANTHROPIC_API_KEY (or any SDK credential): one line, exit 2, ledger and folder untouched."""
    ledger = tool_ledger(tmp_path, STEPS, FLEET, invariants=INVARIANTS)
    before = ledger.read_bytes()
    files = sorted(p.name for p in ledger.parent.iterdir())
    result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", environ=env(tmp_path, None, key=False))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "needs an Anthropic credential" in result.stderr
    assert "ANTHROPIC_API_KEY" in result.stderr and "Traceback" not in result.stderr
    assert ledger.read_bytes() == before
    assert sorted(p.name for p in ledger.parent.iterdir()) == files  # no journal, lock, heartbeat or lease


def test_guard_refuses_bad_proposals_however_the_model_argues(tmp_path: Path) -> None:
    """A step on a target already in flight, a cutover on an unverified target and a link past the
    touched limit are refused and never run; only the one valid proposal runs."""
    ledger = tool_ledger(tmp_path, STEPS, FLEET, invariants=INVARIANTS)
    bad = [tool_use("run_step", target="b", step="sync", reason="b is replicating; sync is next"),
           tool_use("run_step", target="b", step="sync", reason="run it twice to be sure"),
           tool_use("run_step", target="c", step="cutover", reason="I am confident c is fine, the lag is low"),
           tool_use("run_step", target="d", step="link", reason="the limit is only a guideline")]
    rules = [{"id": "bad", "match": FIRST_TURN, "times": 1, "reply": {"content": bad}}, after_result_rule(),
             note_rule("b was synced. c and d wait for the next session.")]
    with api(tmp_path, rules) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ran(ledger) == [["sleep", "1"]]  # the valid sync, once; nothing else ran
    targets = load(ledger)["targets"]
    assert {n: t["state"] for n, t in targets.items()} == {"a": "queued", "b": "verified", "c": "replicating", "d": "checked"}
    answers = [r["content"] for r in tool_results(requests[1])]
    assert answers[0].startswith("started: b sync")
    assert answers[1] == "refused: b already has sync in flight"
    assert answers[2] == "refused: c is replicating; cutover runs only from verified"
    assert answers[3] == "refused: invariant: never touch more than 2 dbs concurrently (touched 2/2; d would make 3)"
    assert not any(r.get("is_error") for r in tool_results(requests[1]))
    records = journal(ledger)
    proposals = [r for r in records if r["kind"] == "proposal"]
    assert [(r["target"], r["reason"]) for r in proposals] == [
        ("b", "b is replicating; sync is next"), ("b", "run it twice to be sure"),
        ("c", "I am confident c is fine, the lag is low"), ("d", "the limit is only a guideline")]
    assert [r["target"] for r in records if r["kind"] == "refusal"] == ["b", "c", "d"]
    assert "b: planner proposes sync: b is replicating; sync is next" in result.stdout


def test_malformed_tool_calls_get_error_results_never_a_crash(tmp_path: Path) -> None:
    """An unknown tool, a missing field, an unknown target or step: is_error tool results; nothing runs.
    The brief and the tool results are redacted like the journal: no secret reaches the model."""
    fleet = {**FLEET, "b": {"state": "replicating", "reason": "the lag probe logs in with hunter22"}}
    ledger = tool_ledger(tmp_path, STEPS, fleet, invariants=INVARIANTS, redact=[r"hunter\d+"],
                         handoff_note="Replication user: PGPASSWORD=s3cret-pw; do not print it.")
    calls = [tool_use("rm_rf", path="/"), tool_use("run_step", target="a", step="check"),
             tool_use("run_step", target="zz", step="check", reason="r"), tool_use("run_step", target="a", step="explode", reason="r"),
             tool_use("read_target", target=7), tool_use("read_target", target="b")]
    rules = [{"id": "malformed", "match": FIRST_TURN, "times": 1, "reply": {"content": calls}}, after_result_rule(),
             note_rule("Nothing ran. b and c are replicating.")]
    with api(tmp_path, rules) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert ran(ledger) == []
    results = tool_results(requests[1])
    assert [r.get("is_error", False) for r in results] == [True, True, True, True, True, False]
    texts = [r["content"] for r in results]
    assert texts[0] == "error: there is no tool 'rm_rf'; the tools are run_step, read_target, write_handoff_note, end_session"
    assert texts[1] == "error: run_step needs 'reason' as a non-empty string (got None)"
    # The words `handoff run` says of a name the ledger does not have (engine.errors.NoSuchName)
    assert texts[2] == f"error: no target named 'zz' in {ledger} (targets include a, b, c, d)"
    assert texts[3] == f"error: no runbook step named 'explode' in {ledger} (runbook steps include check, link, sync, cutover)"
    assert texts[4].startswith("error: read_target needs 'target' as a non-empty string")
    assert texts[5].startswith("target b: state replicating\nrecord: {") and "steps from here: sync: replicating -> verified" in texts[5]
    assert sum(1 for r in journal(ledger) if r["kind"] == "warning" and "malformed" in r["msg"]) == 3
    assert [t["state"] for t in load(ledger)["targets"].values()] == ["queued", "replicating", "replicating", "checked"]
    assert last_user(requests[1]).startswith("error: there is no tool")
    assert "the lag probe logs in with [REDACTED]" in texts[5] and "PGPASSWORD=[REDACTED]" in last_user(requests[0])
    sent = json.dumps([r["body"] for r in requests])
    assert "hunter22" not in sent and "s3cret-pw" not in sent


def test_demo_fleet_driven_to_the_end_with_approvals_given_mid_run(tmp_path: Path) -> None:
    """A scripted model that follows the brief drives the demo fleet until only people can move it;
    a human approves each irreversible step (`handoff approve`) while the session waits."""
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"
    rules = [note_rule("Every db that could move is done. db-20 and db-27 wait on people."), after_result_rule(), follow_rule()]
    with api(tmp_path, rules) as fake:
        environ = env(tmp_path, fake, world)
        proc = start("resume", "--ledger", str(ledger), "--planner", "claude", "--wait", "--max-minutes", "5",
                     "--max-steps", "400", environ=environ, output=tmp_path / "session.out")
        approved: list[tuple[str, str]] = []
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            for name, t in load(ledger)["targets"].items():
                if t.get("state") == "awaiting_approval" and (name, t["awaiting"]) not in approved:
                    done = handoff("approve", str(ledger), name, "--as", "carol", "--comment", "lag fine", environ=environ)
                    if done.returncode == 0:
                        approved.append((name, t["awaiting"]))
            time.sleep(0.2)
        proc.wait(timeout=60)
        out = (tmp_path / "session.out").read_text()
        requests = messages(fake)
    assert proc.returncode == 0, out
    states = {n: t["state"] for n, t in load(ledger)["targets"].items()}
    assert states.pop("db-20") == "blocked" and states.pop("db-27") == "failed"
    assert set(states.values()) == {"done"}
    moved = [f"db-{n}" for n in (18, 19, 21, 22, 23, 24, 25, 26, *range(28, 41))]
    assert sorted(approved) == sorted([("db-18", "cutover")] + [(n, s) for n in moved[1:] for s in ("link", "cutover")])
    runs = counts(world)
    assert all(runs[n]["cutover_runs"] == 1 for n in moved)  # each irreversible step ran exactly once
    assert all(runs[n]["link_runs"] == 1 for n in moved[1:]) and runs.get("db-18", {}).get("link_runs", 0) == 0
    assert "nothing can proceed without a human (2 target(s) wait on people)" in out
    assert assert_fresh_turns(requests) > 50  # many turns, never an earlier turn's tool_use id
    records = journal(ledger)
    assert all(r.get("reason") for r in records if r["kind"] == "proposal")
    usage = [r for r in records if r["kind"] == "planner_usage"]
    assert usage and all(r["cache_read_tokens"] > 0 for r in usage[1:])  # system and tools come from the cache
    assert usage[-1]["tokens_used"] == sum(r["tokens"] for r in usage)


def test_budget_crossing_the_handoff_point_forces_the_note(tmp_path: Path) -> None:
    """With --max-tokens, crossing 75% proposes nothing new, lets the running step finish, then asks
    for the note with tool_choice forcing write_handoff_note (a model that accepts forcing)."""
    ledger = tool_ledger(tmp_path, STEPS, FLEET, invariants=INVARIANTS)
    rules = [{"id": "sync", "match": FIRST_TURN, "times": 1,
              "reply": {"content": [tool_use("run_step", target="b", step="sync", reason="b is next")],
                        "usage": {"input_tokens": 500, "output_tokens": 100, "cache_creation_input_tokens": 200}}},
             {"id": "spend", "match": {"last_user": r"\Astarted"},
              "reply": {"content": [{"type": "text", "text": "Waiting for b."}],
                        "usage": {"input_tokens": 7000, "output_tokens": 50, "cache_read_input_tokens": 200}}},
             {"id": "forced-note", "match": {"tool_choice": "write_handoff_note"},
              "reply": {"content": [tool_use("write_handoff_note", text="b is verified; c (replicating) and d (checked) are next.")]}}]
    with api(tmp_path, rules) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", "--model", "claude-opus-5",
                         "--max-tokens", "10000", environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["rule"] for r in requests] == ["sync", "spend", "forced-note"]
    final = requests[-1]["body"]
    assert final["tool_choice"] == {"type": "tool", "name": "write_handoff_note"}
    assert len(final["messages"]) == 1 and "In flight: nothing" in last_user(requests[-1])  # b finished first
    assert "THE SESSION IS ENDING: session budget 80% used" in last_user(requests[-1])
    assert final["system"][-1]["cache_control"] == {"type": "ephemeral"} and final["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    data = load(ledger)
    assert data["targets"]["b"]["state"] == "verified" and ran(ledger) == [["sleep", "1"]]
    assert data["handoff_note"] == "b is verified; c (replicating) and d (checked) are next."  # true: no Reviewer: section
    usage = [r for r in journal(ledger) if r["kind"] == "planner_usage"]
    assert [r["turn"] for r in usage] == ["1", "handoff note"]
    assert usage[0]["tokens"] == 500 + 100 + 200 + 7000 + 50 + 200 and usage[0]["cache_read_tokens"] == 200
    assert usage[0]["cost_usd"] == (500 * 5 + 100 * 25 + 200 * 6.25 + 7000 * 5 + 50 * 25 + 200 * 0.5) / 1e6
    assert "session budget 80% used. Finishing 1 running step(s), then writing handoff_note" in result.stdout


def test_model_unavailable_for_every_call_exits_6_with_the_engines_note(tmp_path: Path) -> None:
    """529 on every request: the SDK retries, then the session stops proposing, lets the running step
    finish, writes the engine's own note, releases the lease and exits 6 with nothing in flight."""
    ledger = tool_ledger(tmp_path, STEPS, FLEET, invariants=INVARIANTS)
    rules = [{"id": "sync", "match": FIRST_TURN, "times": 1, "reply": {"content": [tool_use("run_step", target="b", step="sync", reason="b")]}},
             {"id": "down", "match": {"body": "."}, "reply": {"status": 529, "error": {"message": "Overloaded"}}}]
    with api(tmp_path, rules) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 6, result.stdout + result.stderr
    assert [r["status"] for r in requests] == [200] + [529] * 4  # the first try and the SDK's 3 retries
    assert all(r["headers"].get("x-stainless-retry-count") == str(i) for i, r in enumerate(requests[1:]))
    data = load(ledger)
    assert data.get("session") is None
    assert all("in_flight" not in t for t in data["targets"].values())
    assert data["targets"]["b"]["state"] == "verified"  # the step that ran finished and was recorded
    note = data["handoff_note"]
    assert note.startswith("Session ") and "ended: the planner's API stayed unavailable." in note
    assert "Reviewer:" not in note  # the engine's note passes its own review
    assert "the planner cannot go on: the model's API answered HTTP 529 overloaded_error: Overloaded" in result.stdout
    assert journal(ledger)[-1]["kind"] == "session_end" and journal(ledger)[-1]["exit_code"] == 6


AWAITING = {**FLEET, "d": {"state": "awaiting_approval", "awaiting": "link", "awaiting_by": "agent:earlier",
                           "awaiting_since": "2026-09-10T02:00:00Z"}}
END = {"id": "end", "match": FIRST_TURN, "times": 1,
       "reply": {"content": [tool_use("end_session", reason="only people can move the rest")]}}


def test_reviewer_amends_a_planner_note_that_omits_an_awaiting_target(tmp_path: Path) -> None:
    """end_session, then the note (asked in words: the default model refuses forced tools); the note
    leaves out d, which awaits approval: a Reviewer: section names it. A person's note is kept as written."""
    ledger = tool_ledger(tmp_path, STEPS, AWAITING, invariants=INVARIANTS)
    first = {**END, "reply": {"content": [tool_use("write_handoff_note", text="Mid-session: d awaits approval of link."),
                                          *END["reply"]["content"]]}}
    with api(tmp_path, [first, note_rule("b and c are replicating; a is queued.")]) as fake:
        environ = env(tmp_path, fake)
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", environ=environ)
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the planner ended the session: only people can move the rest" in result.stdout
    assert [r["rule"] for r in requests] == ["end", "note"] and "tool_choice" not in requests[1]["body"]
    note = load(ledger)["handoff_note"]
    head, reviewer = note.split("\nReviewer: (checked against the ledger at ")
    assert head == "b and c are replicating; a is queued."
    assert reviewer.endswith(")\n- d awaits approval of link, but the note does not name it\n")
    mid, record = [r for r in journal(ledger) if r["kind"] == "note_review"]
    assert "problems" not in mid and mid["msg"] == "note review: the claude planner's note passes"  # the mid-session note
    assert record["problems"] == ["d awaits approval of link, but the note does not name it"] and record["author"] == "claude"

    person = handoff("note", str(ledger), "--set", "All quiet; a is done.", "--as", "erin", environ=environ)
    assert person.returncode == 0
    assert load(ledger)["handoff_note"] == "All quiet; a is done."  # stored exactly as written
    assert person.stdout.splitlines() == [
        "handoff note saved", "the reviewer found 2 problem(s); your note is stored as you wrote it:",
        "- d awaits approval of link, but the note does not name it",
        "- the note says a is done; the ledger says queued, nothing in flight"]
    last = journal(ledger)[-1]
    assert last["kind"] == "note" and last["actor"] == "erin" and last["text"] == "All quiet; a is done."
    assert ["- " + p for p in last["review"]] == person.stdout.splitlines()[2:] and "the reviewer found 2 problem(s): d awaits" in last["msg"]


def test_model_review_adds_its_problems_from_its_own_conversation(tmp_path: Path) -> None:
    """agent: {review: model}: a fresh conversation with review_note forced; its problems are appended."""
    ledger = tool_ledger(tmp_path, STEPS, AWAITING, invariants=INVARIANTS,
                         agent={"model": "claude-opus-5", "review": "model"})
    review = {"id": "review", "match": {"tool": "review_note"},
              "reply": {"content": [tool_use("review_note", ok=False, problems=["It does not say who approves d."])]}}
    forced = {"id": "note", "match": {"tool_choice": "write_handoff_note"},
              "reply": {"content": [tool_use("write_handoff_note", text="d awaits approval of link. b and c are replicating.")]}}
    with api(tmp_path, [END, review, forced]) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["rule"] for r in requests] == ["end", "note", "review"]
    body = requests[2]["body"]
    assert body["model"] == "claude-opus-5" and len(body["messages"]) == 1
    assert body["system"][0]["text"].startswith("You review a handoff note")
    assert body["tool_choice"] == {"type": "tool", "name": "review_note"} and [t["name"] for t in body["tools"]] == ["review_note"]
    assert "The handoff note to review:\nd awaits approval of link. b and c are replicating." in last_user(requests[2])
    note = load(ledger)["handoff_note"]
    assert note.startswith("d awaits approval of link. b and c are replicating.\nReviewer: ")
    assert note.endswith("- (model review) It does not say who approves d.\n")
    assert [r["turn"] for r in journal(ledger) if r["kind"] == "planner_usage"] == ["1", "handoff note", "note review"]


def test_a_model_that_refuses_forced_tools_is_asked_in_words(tmp_path: Path) -> None:
    """An unknown model is tried with forcing; a 400 naming tool_choice switches to asking in words."""
    ledger = tool_ledger(tmp_path, STEPS, AWAITING, invariants=INVARIANTS)
    refuse = {"id": "refuse", "match": {"tool_choice": "write_handoff_note"},
              "reply": {"status": 400, "error": {"message": "tool_choice: forced tool use is not supported for this model"}}}
    with api(tmp_path, [END, refuse, note_rule("d awaits approval of link.")]) as fake:
        result = handoff("resume", "--ledger", str(ledger), "--planner", "claude", "--model", "claude-next-9",
                         environ=env(tmp_path, fake))
        requests = messages(fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [(r["rule"], r["status"]) for r in requests] == [("end", 200), ("refuse", 400), ("note", 200)]
    assert load(ledger)["handoff_note"] == "d awaits approval of link."
    assert "claude-next-9 does not accept a forced tool choice" in result.stdout
    usage = [r for r in journal(ledger) if r["kind"] == "planner_usage"]
    assert all(r.get("cost_usd") is None for r in usage) and "cost unknown" in usage[-1]["msg"]  # not in the price table


def test_kill_9_mid_step_then_autopilot_reconciles_from_the_ledger(tmp_path: Path) -> None:
    """A Claude-driven session dies mid-step (kill -9); status showed its planner, tokens and spend;
    an autopilot session takes the dead lease over and settles the step from the ledger alone."""
    # The step runs until the test lets it end: past the first heartbeat that carries the turn's tokens
    # (beats are 2 s apart), past the kill, and on while the autopilot session takes the lease over.
    gate = "import os, time\nwhile not os.path.exists(os.path.join('{ledger_dir}', 'go')): time.sleep(0.05)"
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["{python}", "-c", gate]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}})
    rules = [{"id": "go", "match": FIRST_TURN, "times": 1, "reply": {"content": [tool_use("run_step", target="a", step="check", reason="a")]}},
             after_result_rule()]
    heartbeat = Path(str(ledger) + ".heartbeat")
    with api(tmp_path, rules) as fake:
        environ = env(tmp_path, fake)
        proc = start("resume", "--ledger", str(ledger), "--planner", "claude", "--max-tokens", "50000", environ=environ,
                     output=tmp_path / "claude.out")
        try:
            wait_for(lambda: (load(ledger)["targets"]["a"].get("in_flight") or {}).get("pid"), what="a step with a pid")
            wait_for(lambda: heartbeat.exists() and json.loads(heartbeat.read_text()).get("tokens_used", 0) > 0, what="tokens in the heartbeat")
            status = json.loads(handoff("status", str(ledger), "--json", environ=environ).stdout)["session"]
            text = handoff("status", str(ledger), environ=environ).stdout
        finally:
            os.kill(proc.pid, signal.SIGKILL)  # the session only: the step runs on in its own process group
            proc.wait(10)
    beat = json.loads(heartbeat.read_text())
    assert beat["planner"] == "claude" and beat["tokens_budget"] == 50000 and beat["cost_usd"] > 0
    assert "claude: claude-sonnet-5-5" in beat["phase"] and "of 50,000 tokens" in beat["phase"]
    assert status["planner"] == "claude" and status["model"] == "claude-sonnet-5-5" and status["tokens_budget"] == 50000
    assert status["tokens_used"] == beat["tokens_used"] and status["cost_usd"] > 0
    assert f"planner: claude (claude-sonnet-5-5), {status['tokens_used']:,} of 50,000 tokens used, $" in text
    assert load(ledger)["targets"]["a"]["in_flight"]["step"] == "check"

    after = start("resume", "--ledger", str(ledger), environ=env(tmp_path, None), output=tmp_path / "autopilot.out")
    try:
        wait_for(lambda: any(r["kind"] == "reconcile" and "check is still running" in r.get("msg", "")
                             for r in journal(ledger)), timeout=60,
                 what="the autopilot session, past the takeover, to find the step still running and wait for it")
        (ledger.parent / "go").touch()  # the step, still running in its own process group, ends now
        after.wait(timeout=120)
    finally:
        if after.poll() is None:
            os.killpg(after.pid, signal.SIGKILL)
            after.wait(10)
    out = (tmp_path / "autopilot.out").read_text()
    assert after.returncode == 0, out
    assert "took over the lease" in out
    data = load(ledger)
    assert data["targets"]["a"]["state"] == "checked" and "in_flight" not in data["targets"]["a"]
    assert data.get("session") is None
    kinds = [r["kind"] for r in journal(ledger)]
    assert "lease_takeover" in kinds and kinds.count("session_start") == 2
    assert json.loads(handoff("status", str(ledger), "--json", environ=environ).stdout)["session"] is None


def test_the_agent_block_is_validated_where_it_is_written(tmp_path: Path) -> None:
    """A bad `agent.review` is a file:line:col error (exit 2) for check and resume; nothing changes."""
    ledger = tool_ledger(tmp_path, STEPS, FLEET, invariants=INVARIANTS)
    text = ledger.read_text() + "agent: {model: claude-opus-5, review: sometimes}\n"
    ledger.write_text(text)
    line = text.splitlines().index("agent: {model: claude-opus-5, review: sometimes}") + 1
    environ = env(tmp_path, None)
    for args in (("check", str(ledger)), ("resume", "--ledger", str(ledger), "--planner", "claude")):
        result = handoff(*args, environ=environ)
        assert result.returncode == 2
        assert result.stderr.startswith(f"handoff: {ledger}:{line}:39: agent.review: Input should be 'deterministic' or 'model'")
        assert ledger.read_text() == text
    schema = json.loads(handoff("schema", environ=environ).stdout)
    assert set(schema["$defs"]["Agent"]["properties"]) == {"model", "review", "unknown_commands"}
