"""Parallel targets on the LangGraph runtime: the plan node fans out to the targets' nodes,
at most the ledger's concurrency at once, and exactly-once survives kill -9 with two
irreversible steps in flight. Real `handoff resume --runtime langgraph` processes, the
real PostgresSaver on the real PostgreSQL (a schema of the test's own), real step processes.

- four targets, "never touch more than 3 targets concurrently": three steps run at once
  (each waits on a barrier that only opens when three have started: sequential nodes
  would time it out), never four;
- two approved irreversible links started in one super-step, the runtime killed -9 while
  both run: the next run resumes at both nodes, the fence refuses a second start of each
  ("already started (journal seq N)"), their probes prove them; each link ran once.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import counts, handoff, journal, load, wait_for  # noqa: E402
from test_langgraph_fleet import _runtime, _spawned  # noqa: E402

# Each `prep` waits until three have started (or fails after 20 s), and records how many
# ran at that moment; `finish` is a plain reversible step.
BARRIER = textwrap.dedent('''\
    import os, sys, time
    here, name, n = os.path.dirname(os.path.abspath(__file__)), sys.argv[1], int(sys.argv[2])
    marks = os.path.join(here, "marks")
    os.makedirs(marks, exist_ok=True)
    open(os.path.join(marks, name + ".running"), "w").close()
    deadline = time.time() + 20
    while sum(f.endswith(".running") or f.endswith(".ran") for f in os.listdir(marks)) < n:
        if time.time() > deadline:
            print("barrier: fewer than %d steps ran at once" % n); sys.exit(1)
        time.sleep(0.05)
    running = sum(f.endswith(".running") for f in os.listdir(marks))
    with open(os.path.join(here, "running.log"), "a") as fh:
        fh.write("%s %d\\n" % (name, running))
    time.sleep(0.3)
    os.rename(os.path.join(marks, name + ".running"), os.path.join(marks, name + ".ran"))
''')


def _barrier_ledger(tmp: Path) -> Path:
    folder = tmp / "par"
    folder.mkdir()
    (folder / "barrier.py").write_text(BARRIER)
    steps = [{"name": "prep", "from": "queued", "to": "ready", "reversible": True, "timeout": 60,
              "run": ["{python}", "{ledger_dir}/barrier.py", "{target}", "3"]},
             {"name": "finish", "from": "ready", "to": "done", "reversible": True, "timeout": 30,
              "run": ["{python}", "-c", "print('finished')"]}]
    data = {"task": "parallel-test", "owner_shift": "test-oncall",
            "invariants": ["never touch more than 3 targets concurrently"],
            "targets": {n: {"state": "queued"} for n in ("a", "b", "c", "d")}, "runbook": {"steps": steps}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _most_at_once(ledger: Path) -> int:
    running, most = set(), 0
    for r in journal(ledger):
        if r.get("kind") == "step_start":
            running.add(r["target"])
        elif r.get("kind") == "step_end":
            running.discard(r["target"])
        most = max(most, len(running))
    return most


def test_targets_step_in_parallel_bounded_by_the_ledgers_concurrency(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = _barrier_ledger(tmp_path)
    proc = _runtime(ledger, url, tmp_path / "world")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert {n: t["state"] for n, t in load(ledger)["targets"].items()} == dict.fromkeys("abcd", "done")
    log = (ledger.parent / "running.log").read_text().split()
    at_once = {log[i]: int(log[i + 1]) for i in range(0, len(log), 2)}
    assert sorted(at_once) == ["a", "b", "c", "d"]  # each prep ran once
    assert max(at_once.values()) == 3, at_once  # three at once, never the fourth (the ledger's bound)
    assert _most_at_once(ledger) == 3
    starts = [r["target"] for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "prep"]
    assert sorted(starts) == ["a", "b", "c", "d"]


def _link_starts(ledger: Path) -> dict[str, int]:
    """target -> the `seq` (byte offset in the journal file, engine.audit.journal) of each link's start."""
    import json

    found, offset = {}, 0
    path = Path(str(ledger) + ".journal.jsonl")
    for line in (path.read_bytes().splitlines(keepends=True) if path.exists() else []):
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") == "step_start" and record.get("step") == "link":
            assert record["target"] not in found, f"a second start of {record['target']}'s link"
            found[record["target"]] = offset
        offset += len(line)
    return found


def test_kill9_with_two_irreversible_steps_in_flight_runs_each_once(tmp_path: Path, checkpointer) -> None:
    from session_kit import demo_copy

    url, _schema = checkpointer
    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}, "db-21": {"state": "queued"}})
    world = tmp_path / "world"
    both = ("db-19", "db-21")
    # Run 1: both checked in parallel, both links asked for; stopped while it waits.
    first = _runtime(ledger, url, world)
    try:
        wait_for(lambda: all(load(ledger)["targets"][n].get("awaiting") == "link" for n in both), 60, "both links asked")
        assert handoff("stop", str(ledger), world=world).returncode == 0
        first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0
    for name in both:  # approved while no runtime runs: the next run wakes both nodes at once
        result = handoff("approve", str(ledger), name, "--yes", "--as", "human-oncall", world=world)
        assert result.returncode == 0, result.stdout + result.stderr
    # Run 2: both links start in one super-step (speed 1: each runs 2 s); kill -9 while both run.
    second = _runtime(ledger, url, world, HANDOFF_SIM_SPEED="1")
    try:
        def both_in_flight() -> list[str]:
            running = [n for n, t in load(ledger)["targets"].items() if t.get("in_flight", {}).get("step") == "link"]
            return running if len(_link_starts(ledger)) == 2 and _spawned(ledger) else []

        running = wait_for(both_in_flight, 60, "both links to start")  # read in the same look as the starts
        os.kill(second.pid, signal.SIGKILL)  # the runtime only: its step processes run on, as after a crash
        second.wait(10)
    finally:
        if second.poll() is None:
            second.kill()
    assert sorted(running) == list(both), "killed with both links in flight"
    seqs = _link_starts(ledger)
    # Run 3: resumes at both nodes; the fence and journal refuse a second start, the probes prove them.
    third = _runtime(ledger, url, world, HANDOFF_SIM_SPEED="10")
    try:
        wait_for(lambda: all(load(ledger)["targets"][n].get("awaiting") == "cutover" for n in both), 90, "both cutovers asked")
        assert handoff("stop", str(ledger), world=world).returncode == 0
        out, err = third.communicate(timeout=60)
    finally:
        if third.poll() is None:
            third.kill()
    assert third.returncode == 0, out + err
    assert "resumes at run db-19, run db-21" in out or "resumes at run db-21, run db-19" in out, out
    for name in both:
        assert f"{name}: link already started (journal seq {seqs[name]}); it is never started again" in out, out
        assert counts(world)[name]["link_runs"] == 1
    assert _link_starts(ledger) == seqs, "a link was started a second time"
    proved = [r for r in journal(ledger) if "is irreversible, so it is not run again; its verify proves it happened" in r.get("msg", "")]
    assert sorted(r["target"] for r in proved) == list(both)
    assert not [n for n, t in load(ledger)["targets"].items() if t.get("in_flight")]
