"""rev-words: a ledger paused AND drifted at the start ends every runtime the same way, exit 3.

db-18's recorded checkpoint disagrees with the simulator's world and the ledger is paused. A
LangGraph thread (and a Temporal workflow) probed first and exited 3; the built-in session saw
the pause first and exited 4 without probing, so cron's alert said "paused" where a person had a
reconcile to do. Drift that needs a person's `handoff reconcile` outranks a pause, as a hand edit
does (docs/ledger.md "Exit codes"): exit 3, the drift recorded on the target, nothing run.
Real `handoff resume` processes, the demo simulator's world, the real PostgreSQL checkpointer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import counts, demo_copy, handoff, journal, load, resume, sim  # noqa: E402

SMALL = {"db-18": {"state": "replicating", "checkpoint": "0/9A3F2C10"}, "db-19": {"state": "checked"}}


@pytest.mark.parametrize("runtime", ["session", "langgraph"])
def test_paused_and_drifted_at_the_start_is_exit_3_in_every_runtime(tmp_path: Path, runtime: str, request) -> None:
    ledger = demo_copy(tmp_path, dict(SMALL))
    world = tmp_path / "world"
    assert sim(world, "drift", "db-18", "0/DEADBEEF").returncode == 0
    assert handoff("pause", str(ledger), "--reason", "INC-1 hold", "--as", "alice", world=world).returncode == 0
    extra: tuple[str, ...] = ()
    if runtime == "langgraph":
        url, _schema = request.getfixturevalue("checkpointer")
        extra = ("--runtime", "langgraph", "--checkpointer", url)
    result = resume(ledger, *extra, world=world)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "db-18: verifying checkpoint 0/9A3F2C10 ... MISMATCH: reality says '0/DEADBEEF'" in result.stdout, result.stdout
    db18 = load(ledger)["targets"]["db-18"]
    assert "checkpoint drift" in db18["reason"], db18
    assert any(r["kind"] == "drift" and r.get("target") == "db-18" for r in journal(ledger))
    assert load(ledger)["paused"], load(ledger)  # still paused: the drift is said, the pause is not lifted
    assert counts(world).get("db-19", {}).get("link_runs", 0) == 0  # nothing acted
    assert load(ledger).get("session") is None


def test_paused_and_drifted_at_the_start_is_exit_3_for_a_temporal_workflow(tmp_path: Path, tmp_path_factory) -> None:
    """The same ledger under `handoff resume --runtime temporal --follow`: the workflow's own code, 3."""
    from temporal_kit import Server, Workers, handoff_proc, queue

    ledger = demo_copy(tmp_path, dict(SMALL))
    world, q = tmp_path / "world", queue()
    assert sim(world, "drift", "db-18", "0/DEADBEEF").returncode == 0
    assert handoff("pause", str(ledger), "--reason", "INC-1 hold", "--as", "alice", world=world).returncode == 0
    server = Server(tmp_path_factory.mktemp("temporal-words"))
    workers = Workers(server, q, world, tmp_path)
    try:
        workers.start()
        follow = handoff_proc("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, "--follow", world=world)
        try:
            out, err = follow.communicate(timeout=90)
        except subprocess.TimeoutExpired:  # it waits on the pause instead of ending on the drift
            handoff("stop", str(ledger), world=world)
            out, err = follow.communicate(timeout=60)
    finally:
        workers.stop()
        server.stop()
    assert follow.returncode == 3, out + err
    assert "checkpoint drift" in load(ledger)["targets"]["db-18"]["reason"]
    assert load(ledger)["paused"] and load(ledger).get("session") is None
    assert counts(world).get("db-19", {}).get("link_runs", 0) == 0
