"""An approval met between its ledger write and its journal record is waited for, not a dead end.

`handoff approve` writes the ledger first and its journal record (the witness an
irreversible spawn needs) right after. A session that reads the ledger in between sees an
approval without its witness: it must not start the step (the fence refuses it) and it
must not end the session either ("nothing can proceed", "the planner proposes nothing
more"), which is what a busy machine made of the demo fleet under the Claude planner.
Here the approving process is frozen at that very point (failpoint
`before-journal-records`), the session is seen waiting on it, and once the process goes
on the step starts once and the fleet finishes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from claude_kit import after_result_rule, api, env, follow_rule, note_rule

from tests.conftest import ROOT, wait_paused, wait_stopped

LEDGER = """\
task: settling
owner_shift: test-oncall
runbook:
  steps:
  - {name: link, from: checked, to: done, reversible: false, run: ["{python}", "{ledger_dir}/mark.py", "{target}"]}
targets:
  db-19: {state: checked, checkpoint: "0/19"}
"""
MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def _until(what, why: str, limit: float = 90.0):
    deadline = time.monotonic() + limit
    while True:
        got = what()
        if got:
            return got
        assert time.monotonic() < deadline, why
        time.sleep(0.1)


RULES = [note_rule("db-19 is done."), after_result_rule(), follow_rule()]


def _fleet(tmp_path: Path) -> tuple[Path, Path]:
    """(the one-target ledger with its step script beside it, where the session's output goes)."""
    (tmp_path / "mark.py").write_text(MARK)
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    return ledger, tmp_path / "session.out"


def _resume(ledger: Path, planner: str, environ: dict, out: Path, *extra: str) -> subprocess.Popen:
    with open(out, "wb") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--planner", planner,
             "--max-minutes", "3", *extra], env=environ, stdout=fh, stderr=subprocess.STDOUT, cwd=str(ROOT),
            start_new_session=True)


def _records(ledger: Path) -> list[dict]:
    path = Path(str(ledger) + ".journal.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("planner", ["autopilot", "claude"])
def test_a_session_waits_for_an_approval_still_being_recorded(tmp_path: Path, planner: str) -> None:
    ledger, out = _fleet(tmp_path)
    with api(tmp_path, RULES) as fake:
        environ = env(tmp_path, fake)
        session = _resume(ledger, planner, environ, out, "--wait")
        try:
            _until(lambda: yaml.safe_load(ledger.read_text())["targets"]["db-19"]["state"] == "awaiting_approval",
                   "the session never asked for the approval")
            approve = subprocess.Popen(
                [sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "db-19", "--yes", "--as", "alice"],
                env={**environ, "HANDOFF_FAILPOINTS": "before-journal-records"}, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, cwd=str(ROOT))
            wait_stopped(approve.pid)  # the approval is in the ledger; its journal record is not
            assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["approvals"]
            assert not any(r["kind"] == "approval" for r in _records(ledger))
            _until(lambda: "not recorded by the engine yet" in out.read_text(), "the session never met the unrecorded approval")
            # It waits: still running, nothing spawned, nothing refused for good. (Before the fix a session
            # ended within milliseconds of this refusal; the engine's grace for a record in flight is 5 s.)
            time.sleep(0.5)
            assert session.poll() is None, out.read_text()
            assert not (tmp_path / "spawned-db-19").exists()
            assert not any(r["kind"] == "approval_refused" for r in _records(ledger))
            os.kill(approve.pid, signal.SIGCONT)
            assert approve.wait(timeout=60) == 0, approve.stdout.read() if approve.stdout else ""
            assert session.wait(timeout=90) == 0, out.read_text()
        finally:
            if session.poll() is None:
                os.killpg(session.pid, signal.SIGKILL)
    text = out.read_text()
    assert (tmp_path / "spawned-db-19").read_text() == "ran"
    assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["state"] == "done", text
    assert [r["kind"] for r in _records(ledger)].count("step_start") == 1
    assert text.count("not recorded by the engine yet") == 1  # said once, however often the session looked


@pytest.mark.parametrize("planner", ["autopilot", "claude"])
def test_an_approval_given_while_the_session_decides_is_not_left_behind(tmp_path: Path, planner: str) -> None:
    """The session decided "nothing moves" on a ledger where db-19 awaited its approval; the
    approval lands (fully recorded) before the session looks at what waits. It must decide
    again on what the ledger says now and run the step, not end with "nothing can proceed
    without a human" (autopilot) or "the planner proposes nothing more" (claude), which is
    what the LangGraph runtime did on a busy CI machine."""
    ledger, out = _fleet(tmp_path)
    with api(tmp_path, RULES) as fake:
        environ = env(tmp_path, fake)
        paused = tmp_path / "paused-at-nothing-moved"  # only the deciding thread: its lease's heartbeat runs on
        session = _resume(ledger, planner, {**environ, "HANDOFF_FAILPOINTS": "nothing-moved",
                                            "HANDOFF_FAILPOINT_PAUSE": str(paused)}, out)
        try:
            wait_paused(paused, 90)  # it decided on a ledger where db-19 awaits its approval
            assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["state"] == "awaiting_approval"
            approve = subprocess.run(
                [sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "db-19", "--yes", "--as", "alice"],
                env=environ, capture_output=True, text=True, cwd=str(ROOT), timeout=60)
            assert approve.returncode == 0, approve.stderr
            paused.unlink()
            assert session.wait(timeout=90) == 0, out.read_text()
        finally:
            if session.poll() is None:
                os.killpg(session.pid, signal.SIGKILL)
    text = out.read_text()
    assert (tmp_path / "spawned-db-19").read_text() == "ran", text
    assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["state"] == "done", text
    assert "nothing left to do: every target is done" in text
