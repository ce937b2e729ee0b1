"""The Claude planner as the LangGraph runtime's plan node: the agent decides the next step.

Real `handoff resume --runtime langgraph --planner claude` processes, the real anthropic
SDK inside them talking to tests.fakes.messages_api (a scripted model, never the real
API), the real PostgresSaver on the real PostgreSQL, the demo simulator's world.

- a scripted model that follows its brief drives two targets to the end while a human
  approves mid-run: every step the model asked for went through the guard (each
  irreversible one started exactly once, after its approval), every turn began from a
  fresh brief, the run ended with the model's own note (reviewed), and the planner's token memo
  lives in the thread's checkpoint (what the journal says it spent);
- an approval given between the model's turn and the plan node's look at what waits: a turn
  on what the ledger says now, never an early end with the target left behind;
- the model's API down for every call: exit 6, the engine's note, nothing in flight.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from claude_kit import after_result_rule, api, assert_fresh_turns, env, follow_rule, handoff, messages, note_rule, start  # noqa: E402
from langgraph_kit import checkpointer, small_fleet  # noqa: E402,F401
from session_kit import counts, journal, load  # noqa: E402

NOTE = "db-19 and db-21 are done; nothing is in flight and nothing waits on anyone."


def _resume(ledger: Path, url: str, environ: dict, output: Path, *extra: str):
    return start("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer", url, "--planner", "claude",
                 *extra, environ=environ, output=output)


def test_the_claude_plan_node_drives_two_targets_to_the_end(tmp_path: Path, checkpointer) -> None:
    url, schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19", "db-21")
    world = ledger.parent.parent / "world"
    with api(tmp_path, [note_rule(NOTE), after_result_rule(), follow_rule()]) as fake:
        environ = env(tmp_path, fake, world)
        proc = _resume(ledger, url, environ, tmp_path / "run.out")
        approved: list[tuple[str, str]] = []
        deadline = time.monotonic() + 150
        while proc.poll() is None and time.monotonic() < deadline:
            for name, t in load(ledger)["targets"].items():
                if t.get("state") == "awaiting_approval" and (name, t["awaiting"]) not in approved:
                    if handoff("approve", str(ledger), name, "--yes", "--as", "carol", environ=environ).returncode == 0:
                        approved.append((name, t["awaiting"]))
            time.sleep(0.2)
        proc.wait(timeout=60)
        out = (tmp_path / "run.out").read_text()
        requests = messages(fake)
    assert proc.returncode == 0, out
    assert {n: t["state"] for n, t in load(ledger)["targets"].items()} == {"db-19": "done", "db-21": "done"}
    assert sorted(approved) == [(n, s) for n in ("db-19", "db-21") for s in ("cutover", "link")]
    world_counts = counts(world)
    assert all(world_counts[n]["link_runs"] == 1 and world_counts[n]["cutover_runs"] == 1 for n in ("db-19", "db-21"))
    records = journal(ledger)
    proposals = [r for r in records if r["kind"] == "proposal"]
    assert proposals and all(r.get("planner") == "claude" and r.get("reason") for r in proposals)
    starts = [(r["target"], r["step"]) for r in records if r["kind"] == "step_start"]
    assert len(starts) == len(set(starts)) == 8, starts  # check, link, replicate, cutover on each: once
    assert {(r["target"], r["step"]) for r in proposals} >= set(starts)  # nothing ran that the model did not ask for
    assert assert_fresh_turns(requests) > 0
    # The model's note, reviewed against the ledger as a session's: it dropped the previous note's rule.
    note = load(ledger)["handoff_note"]
    assert note.startswith(NOTE + "\nReviewer: (checked against the ledger at "), note
    assert 'missing: "Do NOT retry pg_upgrade on db-18, the --link step is irreversible."' in note
    assert "langgraph thread handoff-" in out and "planner claude" in out
    usage = [r for r in records if r["kind"] == "planner_usage" and r["turn"] != "handoff note"]
    # The planner's memo is in the thread's checkpoint: the tokens the journal says its turns used.
    from engine.langgraph.checkpoints import saver
    from engine.langgraph.graph import config

    with saver(url) as s:
        memo = s.get_tuple(config(f"handoff-{load(ledger)['id']}")).checkpoint["channel_values"]["planner"]["claude"]
    assert memo["turns"] == len(usage) and sum(memo["used"]) == usage[-1]["tokens_used"], (memo, usage[-1])


def test_an_approval_given_while_the_plan_node_decides_is_not_left_behind(tmp_path: Path, checkpointer) -> None:
    """The model's turn saw db-19 awaiting its link's approval and moved nothing; the approval
    lands before the plan node looks at what waits (the plan node's thread paused at failpoint
    `nothing-moved`: a whole-process stop could keep a lock another thread holds). The node
    must take a turn on what the ledger says now, not end with "the planner proposes nothing
    more" and db-19 left behind (a CI run did: exit 0, db-21 verified)."""
    from tests.conftest import wait_paused

    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    world = ledger.parent.parent / "world"
    with api(tmp_path, [note_rule("db-19 is done."), after_result_rule(), follow_rule()]) as fake:
        environ = env(tmp_path, fake, world)
        paused = tmp_path / "paused-at-nothing-moved"
        proc = _resume(ledger, url, {**environ, "HANDOFF_FAILPOINTS": "nothing-moved",
                                     "HANDOFF_FAILPOINT_PAUSE": str(paused)}, tmp_path / "run.out")
        try:
            wait_paused(paused, 120)  # a check step, then the gate: slow on a loaded machine
            assert load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval"
            assert handoff("approve", str(ledger), "db-19", "--yes", "--as", "carol", environ=environ).returncode == 0
            paused.unlink()
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if load(ledger)["targets"]["db-19"].get("state") == "awaiting_approval":
                    handoff("approve", str(ledger), "db-19", "--yes", "--as", "carol", environ=environ)
                time.sleep(0.2)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        out = (tmp_path / "run.out").read_text()
    assert proc.returncode == 0, out
    assert load(ledger)["targets"]["db-19"]["state"] == "done", out
    assert "the planner proposes nothing more" not in out
    assert counts(world)["db-19"]["link_runs"] == 1 and counts(world)["db-19"]["cutover_runs"] == 1


def test_the_models_api_down_ends_with_exit_6_and_the_engines_note(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    world = ledger.parent.parent / "world"
    down = {"id": "down", "match": {"body": "."}, "reply": {"status": 529, "error": {"message": "Overloaded"}}}
    with api(tmp_path, [down]) as fake:
        proc = _resume(ledger, url, env(tmp_path, fake, world), tmp_path / "run.out")
        proc.wait(timeout=120)
        out = (tmp_path / "run.out").read_text()
        requests = messages(fake)
    assert proc.returncode == 6, out
    assert [r["status"] for r in requests] == [529] * 4  # the first try and the SDK's 3 retries, then no more asking
    data = load(ledger)
    assert data.get("session") is None and not data["targets"]["db-19"].get("in_flight")
    assert data["targets"]["db-19"]["state"] == "queued"
    assert "the planner's API stayed unavailable" in data["handoff_note"] and "Reviewer:" not in data["handoff_note"]
    assert journal(ledger)[-1]["kind"] == "session_end" and journal(ledger)[-1]["exit_code"] == 6


def test_kill9_mid_turn_never_starts_the_models_irreversible_step_again(tmp_path: Path, checkpointer) -> None:
    """The runtime killed -9 while the link the model asked for runs inside the plan node: the
    next run resumes at the plan node, settles the link by its probe before the model is asked
    anything (never started again), and the model goes on from a fresh brief."""
    import os
    import signal

    from session_kit import wait_for

    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    world = ledger.parent.parent / "world"

    def approve_waiting(environ) -> None:
        t = load(ledger)["targets"]["db-19"]
        if t.get("state") == "awaiting_approval":
            handoff("approve", str(ledger), "db-19", "--yes", "--as", "carol", environ=environ)

    def link_started() -> bool:  # journaled and its process spawned (its pid in the ledger)
        return (any(r.get("kind") == "step_start" and r.get("step") == "link" for r in journal(ledger))
                and bool(load(ledger)["targets"]["db-19"].get("in_flight", {}).get("pid")))

    with api(tmp_path, [note_rule("db-19 is done."), after_result_rule(), follow_rule()]) as fake:
        environ = env(tmp_path, fake, world)
        first = _resume(ledger, url, {**environ, "HANDOFF_SIM_SPEED": "1"}, tmp_path / "first.out")
        try:
            wait_for(lambda: approve_waiting(environ) or link_started(), 90, "the model's link to start")
            os.kill(first.pid, signal.SIGKILL)  # the runtime only: the link's process runs on, as after a crash
            first.wait(10)
        finally:
            if first.poll() is None:
                first.kill()
        assert load(ledger)["targets"]["db-19"].get("in_flight", {}).get("step") == "link"
        again = _resume(ledger, url, environ, tmp_path / "again.out")
        deadline = time.monotonic() + 120
        while again.poll() is None and time.monotonic() < deadline:
            approve_waiting(environ)
            time.sleep(0.2)
        again.wait(timeout=30)
        out = (tmp_path / "again.out").read_text()
    assert again.returncode == 0, out
    assert "resumes at plan" in out, out
    assert "db-19: link already started (journal seq" in out and "it is never started again" in out, out
    assert counts(world)["db-19"]["link_runs"] == 1 and counts(world)["db-19"]["cutover_runs"] == 1
    assert load(ledger)["targets"]["db-19"]["state"] == "done"
    starts = [r["step"] for r in journal(ledger) if r.get("kind") == "step_start"]
    assert sorted(starts) == ["check", "cutover", "link", "replicate"], starts


def test_bad_planner_flags_are_refused_before_anything_is_written(tmp_path: Path, checkpointer) -> None:
    """No Anthropic credential, or a --handoff-at outside (0, 1]: exit 2 with one clear line,
    the ledger's folder untouched (no id, journal, lock, heartbeat or lease)."""
    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    before, files = ledger.read_bytes(), sorted(p.name for p in ledger.parent.iterdir())
    base = ("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer", url, "--planner", "claude")
    missing = handoff(*base, environ=env(tmp_path, None, key=False))
    assert missing.returncode == 2 and "needs an Anthropic credential" in missing.stderr, missing.stderr
    assert "ANTHROPIC_API_KEY" in missing.stderr and "Traceback" not in missing.stderr
    beyond = handoff(*base, "--handoff-at", "1.5", environ=env(tmp_path, None))
    assert beyond.returncode == 2 and "--handoff-at is a fraction of the budget" in beyond.stderr, beyond.stderr
    assert ledger.read_bytes() == before and sorted(p.name for p in ledger.parent.iterdir()) == files
