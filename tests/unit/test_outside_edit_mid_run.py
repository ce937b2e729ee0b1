"""A hand edit made while a session runs is trusted no more than one made before it started.

The session checks for targets changed outside the engine at its start (exit 3); these
edits land after that, while a step runs:

- a queued target moved on by hand past an irreversible step (to `replicating`, whose step
  is reversible: the session would run it; to `verified`, whose step is irreversible: the
  session would ask a person to approve it as if the earlier steps had run);
- the approval fields written by hand onto a target awaiting approval;
- an approval written by hand onto the very target whose step the session has just decided
  to start (at the `before-intent` failpoint): the intent's own write meets the edit.

Each time the session acts on nothing of the edited target, stops with exit 3 naming it and
`handoff reconcile`, and the edited target keeps its edit, flagged. Real processes on real
files; the running step waits for the test's `go` file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.api import open_ledger
from engine.ledger.render import approval_hash
from tests.conftest import ROOT, cli_env, wait_paused
from tests.unit.session_kit import journal, wait_for

GATE = "import os, time\nwhile not os.path.exists(os.path.join('{ledger_dir}', 'go')): time.sleep(0.05)"  # until the test says


def _ledger(tmp_path: Path, targets: dict) -> Path:
    touch = ["{python}", "-c", "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"]
    path = tmp_path / "ledger.yaml"
    path.write_text(yaml.safe_dump({
        "task": "hand edit mid-run", "owner_shift": "test-oncall",
        "invariants": ["never touch more than 2 dbs concurrently"],
        "runbook": {"steps": [
            {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["{python}", "-c", GATE]},
            {"name": "link", "from": "checked", "to": "replicating", "run": [*touch, "{ledger_dir}/RAN-link-{target}"]},
            {"name": "replicate", "from": "replicating", "to": "verified", "reversible": True,
             "run": [*touch, "{ledger_dir}/RAN-replicate-{target}"]},
            {"name": "cutover", "from": "verified", "to": "done", "run": [*touch, "{ledger_dir}/RAN-cutover-{target}"]}]},
        "targets": targets}, sort_keys=False), encoding="utf-8")
    return path


def _session(ledger: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger)], env=cli_env(**env),
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _started(ledger: Path, target: str) -> bool:
    return any(r.get("kind") == "step_start" and r.get("target") == target for r in journal(ledger))


def _edited_seen(ledger: Path) -> bool:
    return any(r.get("kind") == "external_edit" for r in journal(ledger))


def _hand_edit(ledger: Path, name: str, **fields) -> None:
    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    data["targets"][name].update(fields)
    ledger.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _end(proc: subprocess.Popen, go: Path) -> str:
    try:
        go.touch()
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return out


@pytest.mark.parametrize("state", ["replicating", "verified"])
def test_a_target_moved_on_by_hand_mid_run_is_never_acted_on(tmp_path: Path, state: str) -> None:
    """db-01's check runs; db-02 is moved by hand from queued to `state` (check and link skipped).
    The session runs nothing on db-02 and asks nobody to approve its cutover: it stops, exit 3."""
    # db-03, blocked mid-change, and db-01's check take both places: db-02's check cannot start.
    ledger = _ledger(tmp_path, {"db-01": {"state": "queued"}, "db-02": {"state": "queued"},
                                "db-03": {"state": "blocked", "reason": "app team", "touched_at": "2026-12-07T19:00:00Z"}})
    proc = _session(ledger)
    wait_for(lambda: _started(ledger, "db-01"), timeout=60, what="check to start on db-01")
    _hand_edit(ledger, "db-02", state=state)
    # The session's next write (an intent on db-02, or asking for its cutover) meets the edit.
    wait_for(lambda: _edited_seen(ledger) or proc.poll() is not None, timeout=20, what="the edit to be met by a write")
    out = _end(proc, tmp_path / "go")
    assert proc.returncode == 3, out
    assert "db-02 was changed outside the engine" in out and f"handoff reconcile {shlex.quote(str(ledger))} db-02" in out, out
    assert not list(tmp_path.glob("RAN-*-db-02")), out  # neither replicate nor cutover
    assert not _started(ledger, "db-02")
    assert not [r for r in journal(ledger) if r.get("kind") == "gate" and r.get("target") == "db-02"], out
    # Stopped at its next look, finishing only db-01's check: db-01's link was not asked for.
    assert "starting nothing more" in out, out
    assert not [r for r in journal(ledger) if r.get("kind") == "gate" and r.get("target") == "db-01"], out
    after = yaml.safe_load(ledger.read_text(encoding="utf-8"))["targets"]["db-02"]
    assert after["state"] == state and after["changed_outside"]["fields"] == ["state"], after


def test_an_approval_written_by_hand_mid_run_stops_the_session(tmp_path: Path) -> None:
    """db-01 awaits link; while db-02's check runs, its approval is written into the file by hand
    (the right hash, a name). link never runs: the session stops, exit 3, naming db-01's approvals."""
    ledger = _ledger(tmp_path, {"db-01": {"state": "checked"}, "db-02": {"state": "queued"}})
    proc = _session(ledger)
    wait_for(lambda: _started(ledger, "db-02"), timeout=60, what="check to start on db-02")
    wait_for(lambda: yaml.safe_load(ledger.read_text())["targets"]["db-01"]["state"] == "awaiting_approval",
             timeout=60, what="db-01 to await link")
    now = open_ledger(str(ledger)).store.read()
    digest = approval_hash("db-01", now.targets["db-01"], now.step("link"), ledger_dir=str(tmp_path))
    _hand_edit(ledger, "db-01", approvals=[{"step": "link", "hash": digest, "by": "mallory", "user": "mallory",
                                            "at": "2026-12-07T20:00:00Z", "checkpoint": None}])
    out = _end(proc, tmp_path / "go")
    assert proc.returncode == 3, out
    assert "db-01 was changed outside the engine" in out and "approvals; now awaiting_approval" in out, out
    assert not (tmp_path / "RAN-link-db-01").exists(), out
    assert yaml.safe_load(ledger.read_text(encoding="utf-8"))["targets"]["db-01"]["changed_outside"]["fields"] == ["approvals"]


def test_an_approval_written_by_hand_as_the_intent_is_written_stops_the_session(tmp_path: Path) -> None:
    """The session decides to run check on db-01; before its intent is written, an approval of db-01's
    link is written into the file by hand. The intent's write meets the edit: check never runs on
    db-01, the flag is written, and the session stops, exit 3 (not "nothing can proceed", exit 0)."""
    ledger = _ledger(tmp_path, {"db-01": {"state": "queued"}})
    marker = tmp_path / "paused"
    proc = _session(ledger, HANDOFF_FAILPOINTS="before-intent", HANDOFF_FAILPOINT_PAUSE=str(marker))
    try:
        wait_paused(marker, limit=60)
        _hand_edit(ledger, "db-01", approvals=[{"step": "link", "hash": "0123456789abcdef", "by": "mallory",
                                                "user": "mallory", "at": "2026-12-07T20:00:00Z", "checkpoint": None}])
        os.unlink(marker)
    finally:
        out = _end(proc, tmp_path / "go")
    assert proc.returncode == 3, out
    assert "db-01 was changed outside the engine" in out and "approvals; now queued" in out, out
    # Stopped on the flag the intent's write kept, not at the end on the note's write (its note opened
    # "nothing can proceed without a human (0 target(s) wait on people)").
    assert "starting nothing more" in out and "nothing can proceed" not in out, out
    assert not _started(ledger, "db-01"), out
    after = yaml.safe_load(ledger.read_text(encoding="utf-8"))["targets"]["db-01"]
    assert after["state"] == "queued" and after["changed_outside"]["fields"] == ["approvals"], after


def test_an_intent_removed_by_hand_mid_run_stops_the_session(tmp_path: Path) -> None:
    """db-01's check runs; its intent is removed from the file by hand. The step's end writes nothing
    ("cleared by someone else"), so only the handoff note's write meets the edit: the session still
    says db-01 and `handoff reconcile` and exits 3 (it said "nothing can proceed without a human
    (0 target(s) wait on people)", exit 0, and never named db-01)."""
    ledger = _ledger(tmp_path, {"db-01": {"state": "queued"}})
    proc = _session(ledger)
    wait_for(lambda: _started(ledger, "db-01"), timeout=60, what="check to start on db-01")
    _hand_edit(ledger, "db-01", in_flight=None)
    out = _end(proc, tmp_path / "go")
    assert proc.returncode == 3, out
    assert "db-01 was changed outside the engine" in out and "in_flight; now queued" in out, out
    assert f"handoff reconcile {shlex.quote(str(ledger))} db-01" in out, out
    after = yaml.safe_load(ledger.read_text(encoding="utf-8"))["targets"]["db-01"]
    assert after["state"] == "queued" and after["changed_outside"]["fields"] == ["in_flight"], after


def test_a_hand_edit_and_a_pause_together_mid_run_end_the_session_3(tmp_path: Path) -> None:
    """db-01's check runs; db-02 is moved on by hand, then the ledger is paused (the pause's write
    meets the edit). The session names db-02 and exits 3, as a LangGraph run and a Temporal workflow
    do (it ended "ledger paused", exit 4, and never said db-02). Nothing runs on db-02."""
    ledger = _ledger(tmp_path, {"db-01": {"state": "queued"}, "db-02": {"state": "queued"},
                                "db-03": {"state": "blocked", "reason": "app team", "touched_at": "2026-12-07T19:00:00Z"}})
    proc = _session(ledger)
    wait_for(lambda: _started(ledger, "db-01"), timeout=60, what="check to start on db-01")
    _hand_edit(ledger, "db-02", state="replicating")
    paused = subprocess.run([sys.executable, "-m", "engine.cli.main", "pause", str(ledger), "--reason", "incident"],
                            env=cli_env(), cwd=str(ROOT), capture_output=True, text=True, timeout=60)
    assert paused.returncode == 0, paused.stdout + paused.stderr
    out = _end(proc, tmp_path / "go")
    assert proc.returncode == 3, out
    assert "db-02 was changed outside the engine" in out and f"handoff reconcile {shlex.quote(str(ledger))} db-02" in out, out
    assert not _started(ledger, "db-02") and not list(tmp_path.glob("RAN-*-db-02")), out
    after = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    assert after["targets"]["db-02"]["changed_outside"]["fields"] == ["state"] and after["paused"]["why"] == "incident"


def test_a_target_deleted_by_hand_mid_run_ends_the_session_2(tmp_path: Path) -> None:
    """db-01's check runs; db-01 is deleted from the file by hand. Every write after it is refused (the
    ledger shrank): the session says so, naming db-01 and `--accept-removal`, and exits 2, as a
    LangGraph run and a Temporal workflow do."""
    ledger = _ledger(tmp_path, {"db-01": {"state": "queued"},
                                "db-03": {"state": "blocked", "reason": "app team", "touched_at": "2026-12-07T19:00:00Z"}})
    proc = _session(ledger)
    wait_for(lambda: _started(ledger, "db-01"), timeout=60, what="check to start on db-01")
    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    del data["targets"]["db-01"]
    ledger.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out = _end(proc, tmp_path / "go")
    assert proc.returncode == 2, out
    assert "session error:" in out and "missing: db-01" in out and "--accept-removal" in out, out
    assert "ended (exit 2)" in out, out
