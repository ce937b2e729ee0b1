"""Review finding: when a step activity starts later than its intent was written (the
decision's workflow task slow, workers busy, the queue backed up), the settle after its
worker is frozen measures the step's time from the *intent's* `started_at`, not from the
spawn. It then judges a running irreversible step to have "outlived its timeout" and
kills it mid-run (SIGTERM/SIGKILL of its process group), seconds after it started and far
inside its own timeout; its verify then fails and the target is blocked as "may have
half-happened". Real dev server, real workers, a real step process."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import journal, load, tool_ledger, wait_for  # noqa: E402
from temporal_kit import Server, Workers, handoff_run, queue, step_processes  # noqa: E402

from tests.conftest import freeze_holding_no_lock  # noqa: E402

CUT = textwrap.dedent('''\
    import os, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "cut.log"), "a") as fh:
        fh.write("start " + sys.argv[1] + "\\n")
    time.sleep(35)  # the irreversible change takes 35 s; its timeout is 40 s
    with open(os.path.join(here, "cut.log"), "a") as fh:
        fh.write("end " + sys.argv[1] + "\\n")
''')
VERIFY = textwrap.dedent('''\
    import os, sys
    here = os.path.dirname(os.path.abspath(__file__))
    log = os.path.join(here, "cut.log")
    done = os.path.exists(log) and ("end " + sys.argv[1]) in open(log).read().split("\\n")
    print("cut complete" if done else "cut not complete")
    sys.exit(0 if done else 1)
''')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("temporal-review-late"))
    yield s
    s.stop()


def test_a_late_started_irreversible_step_is_not_killed_inside_its_timeout(tmp_path: Path, server: Server) -> None:
    steps = [{"name": "cut", "from": "queued", "to": "done", "reversible": False, "timeout": 40,
              "run": ["{python}", "{ledger_dir}/cut.py", "{target}"],
              "verify": ["{python}", "{ledger_dir}/verify.py", "{target}"]}]
    ledger = tool_ledger(tmp_path, steps, {"t-1": {"state": "queued"}})
    (ledger.parent / "cut.py").write_text(CUT)
    (ledger.parent / "verify.py").write_text(VERIFY)
    world, q = tmp_path / "world", queue()
    workers = Workers(server, q, world, tmp_path)
    paused = tmp_path / "decided.pause"  # only the deciding thread waits: the keeper beats on
    workers.start(HANDOFF_FAILPOINTS="decided", HANDOFF_FAILPOINT_PAUSE=str(paused))
    frozen: int | None = None
    try:
        started = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, world=world)
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: load(ledger)["targets"]["t-1"].get("state") == "awaiting_approval", 60, "t-1 to await approval")
        assert handoff_run("approve", str(ledger), "t-1", "--yes", "--as", "human-oncall", world=world).returncode == 0
        wait_for(paused.exists, 60, "the decision to write the cut's intent")
        time.sleep(35)  # the step activity starts late (a slow decision, a backed-up queue)
        workers.start()  # a second worker on this host: it will settle what the frozen one leaves
        paused.unlink()
        found = wait_for(lambda: step_processes({p.pid for p in workers.alive()}, script="cut.py"), 60, "the cut to start")
        _pid, frozen, _argv = found[0]
        time.sleep(0.5)
        freeze_holding_no_lock(frozen)  # its step runs on; its heartbeat stops; Temporal hands the step to a settle
        wait_for(lambda: [r for r in journal(ledger) if r.get("kind") == "reconcile"], 90, "the other worker to settle t-1")
        time.sleep(5)
        os.kill(frozen, signal.SIGCONT)
        frozen = None
        wait_for(lambda: load(ledger).get("session") is None, 90, "the workflow to hand off")
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
        if paused.exists():
            paused.unlink()
        workers.stop()
    data = load(ledger)
    for r in journal(ledger):
        print(r.get("ts"), r.get("kind"), (r.get("msg") or "")[:200])
    log = (ledger.parent / "cut.log").read_text().split("\n")
    killed = [r.get("msg") for r in journal(ledger) if "outlived its timeout and was killed" in (r.get("msg") or "")]
    assert log.count("start t-1") == 1, log  # started once (never twice)
    assert not killed, f"the settle killed the running irreversible cut 40 s-timeout step early: {killed}"
    assert "end t-1" in log, f"the irreversible cut was cut off half-way: {log}"
    assert data["targets"]["t-1"]["state"] == "done", data["targets"]["t-1"]
