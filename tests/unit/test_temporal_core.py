"""The Temporal runtime's activities' work (engine.temporal.core) on real ledgers, without a
server, and the commands' edges: no SDK, no server, a ledger a workflow holds.

The fences: a step activity of an earlier attempt (a worker taken for dead) never spawns
once a later attempt claimed the intent; an irreversible step's intent is never started
twice; a workflow that finds the lease someone else's hands off without writing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from session_kit import ROOT, env, load, tool, tool_ledger

from engine.errors import UsageError
from engine.session.steps import Fenced, Intent, fenced_launch
from engine.temporal import core

WID = "handoff-00000000-0000-4000-8000-000000000001"


def _job(ledger: Path) -> dict:
    return {"ledger": str(ledger), "workflow_id": WID, "address": "127.0.0.1:1", "namespace": "default",
            "task_queue": "q", "actor": None, "poll": 30.0, "heartbeat_timeout": 20.0}


def _ledger(tmp: Path, *, reversible: bool = True, seconds: str = "0") -> Path:
    step = {"name": "work", "from": "queued", "to": "done", "reversible": reversible, "timeout": 30,
            "run": tool("sleep", seconds) if seconds != "0" else tool("say", "{target}")}
    return tool_ledger(tmp, [step], {"t-1": {"state": "queued"}})


def _runs(ledger: Path) -> list[list[str]]:
    log = ledger.parent / "argv.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_take_lease_records_the_workflow_as_holder(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    start = core.take_lease(_job(ledger))
    assert start["code"] == 0 and start["in_flight"] == []
    session = load(ledger)["session"]
    assert session["id"] == WID and session["runtime"] == "temporal" and "pid" not in session and "host" not in session
    assert session["temporal"] == {"address": "127.0.0.1:1", "namespace": "default", "task_queue": "q", "workflow_id": WID}
    status = subprocess.run([sys.executable, "-m", "engine.cli.main", "status", str(ledger)], capture_output=True,
                            text=True, env=env(tmp_path), cwd=str(ROOT), timeout=60)
    assert f"temporal workflow {WID}" in status.stdout, status.stdout


def test_a_later_attempt_fences_an_earlier_one(tmp_path: Path) -> None:
    """Attempt 2 claimed the intent (attempt 1's worker was taken for dead): attempt 1,
    woken late, never spawns, and the step ran once."""
    ledger = _ledger(tmp_path, seconds="1.5")
    job = _job(ledger)
    core.take_lease(job)
    decided = core.decide(job, [], {})
    (it,) = decided["started"]
    second: dict = {}
    runner = threading.Thread(target=lambda: second.update(core.run_step(job, it, 2)))
    runner.start()
    deadline = time.monotonic() + 20
    while not _runs(ledger):
        assert time.monotonic() < deadline, "attempt 2 never started its step"
        time.sleep(0.05)
    late = core.run_step(job, it, 1)
    runner.join(30)
    assert late == {"fenced": "attempt 2 has taken over from attempt 1"}
    assert second == {"recorded": True}
    assert len(_runs(ledger)) == 1
    assert load(ledger)["targets"]["t-1"]["state"] == "done"


def test_the_spawn_itself_is_fenced_on_the_attempt(tmp_path: Path) -> None:
    """Between an attempt's claim and its spawn, a later attempt claims: nothing starts."""
    ledger = _ledger(tmp_path)
    job = _job(ledger)
    core.take_lease(job)
    (it,) = core.decide(job, [], {})["started"]
    actor = core.WorkflowActor(job, ["t-1"])
    ledger_now = actor.store.read()
    step = ledger_now.step("work")

    def later_attempt(ledger_obj):
        ledger_obj.targets["t-1"].in_flight.attempt = 2

    actor.store.transact(later_attempt)
    intent = Intent("t-1", step, [sys.executable, "-c", "print('ran')"], None, it["token"],
                    core.Decision(True, "reversible"), 0, attempt=1)
    with pytest.raises(Fenced, match="attempt 2"):
        fenced_launch(actor, intent)(lambda: pytest.fail("spawned under a stale attempt"))


def test_an_irreversible_intent_is_started_once(tmp_path: Path) -> None:
    """Temporal gives an irreversible step one attempt; if the same intent ever came back,
    the journal's step_start for its token refuses it."""
    ledger = _ledger(tmp_path, reversible=False)
    job = _job(ledger)
    core.take_lease(job)
    assert core.decide(job, [], {})["started"] == []  # gated: it waits for a human
    assert load(ledger)["targets"]["t-1"]["state"] == "awaiting_approval"
    approve = subprocess.run([sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "t-1", "--yes", "--as", "alice"],
                             capture_output=True, text=True, env=env(tmp_path), cwd=str(ROOT), timeout=60)
    assert approve.returncode == 0, approve.stderr
    # No server at 127.0.0.1:1: said, not failed, and no promise the workflow will see it soon.
    assert f"could not signal temporal workflow {WID}" in approve.stderr and "re-reads the ledger" in approve.stderr
    assert "within 30 s" not in approve.stderr
    (it,) = core.decide(job, [], {})["started"]
    assert it["approval"] is not None and it["attempts"] == 1
    # Put the intent back as it was at the claim, as a redelivered activity would find it.
    first = core.run_step(job, it, 1)
    assert first == {"recorded": True} and len(_runs(ledger)) == 1

    def again(ledger_obj):
        from engine.ledger.model import InFlight

        ledger_obj.targets["t-1"].state = "queued"
        ledger_obj.targets["t-1"].in_flight = InFlight(step="work", session=WID, token=it["token"], attempt=1)

    core.WorkflowActor(job).store.transact(again)
    assert "never runs again" in core.run_step(job, it, 1)["fenced"]
    assert len(_runs(ledger)) == 1


def test_a_workflow_that_lost_the_lease_writes_nothing(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    job = _job(ledger)
    core.take_lease(job)

    def taken(ledger_obj):
        ledger_obj.session.id = "0000-other"

    core.WorkflowActor(job).store.transact(taken)
    before = ledger.read_bytes()
    decided = core.decide(job, [], {})
    assert decided["lost"] and decided["code"] == 5 and decided["started"] == []
    assert core.finish(job, "ending", 0, None, "") is None
    assert "no longer holds the lease" in core.settle(job, "t-1", None)
    assert ledger.read_bytes() == before
    keeper = core.Keeper(job)
    assert "0000-other" in keeper.once()


def _cli(*args: str, tmp: Path, extra: dict | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    prelude = code or ""
    program = prelude + "import sys; from engine.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True,
                          env={**env(tmp), **(extra or {})}, cwd=str(ROOT), timeout=60)


NO_SDK = "import sys; sys.modules['temporalio'] = None\n"  # as if the extra were not installed


def test_without_the_extra_the_commands_say_how_to_install_it(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    for args in (("resume", "--ledger", str(ledger), "--runtime", "temporal"), ("worker",)):
        result = _cli(*args, tmp=tmp_path, code=NO_SDK)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "pip install 'handoff-tui[temporal]'" in result.stderr and "Traceback" not in result.stderr
    assert ledger.read_bytes() == before
    with pytest.raises(UsageError):
        _require_without_sdk()


def _require_without_sdk() -> None:
    saved = sys.modules.get("temporalio")
    sys.modules["temporalio"] = None  # type: ignore[assignment]
    try:
        from engine.temporal import require

        require()
    finally:
        if saved is not None:
            sys.modules["temporalio"] = saved
        else:
            sys.modules.pop("temporalio", None)


def test_without_a_server_resume_says_so_and_changes_nothing(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    result = _cli("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", "127.0.0.1:1", tmp=tmp_path)
    assert result.returncode == 6, result.stdout + result.stderr
    assert "cannot reach the Temporal server at 127.0.0.1:1" in result.stderr and "Traceback" not in result.stderr
    assert ledger.read_bytes() == before  # no id written for a workflow that never started
    worker = _cli("worker", "--temporal", "127.0.0.1:1", tmp=tmp_path)
    assert worker.returncode == 6 and "cannot reach the Temporal server at 127.0.0.1:1" in worker.stderr, worker.stderr


def test_runtime_flags_are_checked(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    for args, said in ((("--follow",), "--follow and --temporal go with --runtime temporal"),
                       (("--runtime", "temporal", "--dry-run"), "--dry-run, other planners and --wait are for the built-in session")):
        result = _cli("resume", "--ledger", str(ledger), *args, tmp=tmp_path)
        assert result.returncode == 2 and said in result.stderr, result.stderr
    assert ledger.read_bytes() == before


def test_status_check_and_approve_never_import_temporalio_unless_a_workflow_holds(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, reversible=False)
    probe = ("import sys, runpy\nsys.argv = ['handoff'] + sys.argv[1:]\n"
             "from engine.cli.main import main\ncode = main(sys.argv[1:])\n"
             "print('TEMPORALIO', 'temporalio' in sys.modules)\nsys.exit(code)")

    def loaded(*args: str) -> bool:
        result = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env(tmp_path),
                                cwd=str(ROOT), timeout=60)
        assert "TEMPORALIO" in result.stdout, result.stdout + result.stderr
        return "TEMPORALIO True" in result.stdout

    assert not loaded("status", str(ledger))
    assert not loaded("check", str(ledger))
    core.take_lease(_job(ledger))
    core.decide(_job(ledger), [], {})  # now awaiting approval, under the workflow's lease
    assert not loaded("status", str(ledger))
    assert loaded("approve", str(ledger), "t-1", "--yes", "--as", "alice")  # it signals the workflow
