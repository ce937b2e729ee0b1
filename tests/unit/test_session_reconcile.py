"""Drift, `handoff reconcile`, and steps a dead session left in flight (demo simulator)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from session_kit import SIM, counts, demo_copy, env, handoff, journal, load, resume, sim

from engine.codec.timefmt import now_iso

SMALL = {
    "db-18": {"state": "replicating", "checkpoint": "0/9A3F2C10"},
    "db-19": {"state": "checked"},
}


def _inflight(step: str, token: str | None = None, pid: int | None = None) -> dict:
    flight = {"step": step, "session": "dead-session", "host": socket.gethostname(), "started_at": now_iso()}
    if token:
        flight["token"] = token
    if pid:
        flight["pid"] = pid
    return flight


def test_drift_stops_the_session_then_reconcile_resolves_it(tmp_path: Path) -> None:
    """Ledger and reality disagree: exit 3, recorded and paged; `reconcile --accept-checkpoint` fixes it."""
    ledger = demo_copy(tmp_path, dict(SMALL))
    world = tmp_path / "world"
    assert sim(world, "drift", "db-18", "0/DEADBEEF").returncode == 0
    result = resume(ledger, world=world)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "db-18: verifying checkpoint 0/9A3F2C10 ... MISMATCH: reality says '0/DEADBEEF'" in result.stdout
    db18 = load(ledger)["targets"]["db-18"]
    assert db18["state"] == "replicating" and "checkpoint drift" in db18["reason"] and "0/DEADBEEF" in db18["reason"]
    assert any(r["kind"] == "drift" for r in journal(ledger))
    assert "ledger and reality disagree" in (world / "pages.log").read_text()
    assert counts(world).get("db-19", {}).get("link_runs", 0) == 0  # nothing acted

    again = resume(ledger, world=world)
    assert again.returncode == 3  # still refuses until a human resolves it

    fixed = handoff("reconcile", str(ledger), "db-18", "--accept-checkpoint", "--reason", "DBA moved the slot", "--as", "erin", world=world)
    assert fixed.returncode == 0, fixed.stderr
    db18 = load(ledger)["targets"]["db-18"]
    assert db18["checkpoint"] == "0/DEADBEEF" and db18.get("reason") is None
    rec = [r for r in journal(ledger) if r["kind"] == "reconcile"][-1]
    assert rec["actor"] == "erin" and rec["reason"] == "DBA moved the slot"
    after = resume(ledger, world=world)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "db-18: verifying checkpoint 0/DEADBEEF ... match" in after.stdout


def test_reconcile_to_a_state(tmp_path: Path) -> None:
    """`--to STATE` records where the target really is, with the probe's checkpoint."""
    ledger = demo_copy(tmp_path, {"db-19": {"state": "blocked", "reason": "someone pulled the plug"}})
    world = tmp_path / "world"
    assert sim(world, "link", "db-19").returncode == 0
    result = handoff("reconcile", str(ledger), "db-19", "--to", "replicating", "--reason", "link did happen", world=world)
    assert result.returncode == 0, result.stderr
    db19 = load(ledger)["targets"]["db-19"]
    assert db19["state"] == "replicating" and db19["checkpoint"] == sim(world, "lsn", "db-19").stdout.strip()
    bad = handoff("reconcile", str(ledger), "db-19", "--to", "nowhere", "--reason", "x", world=world)
    assert bad.returncode == 2 and f"no state named 'nowhere' in {ledger}" in bad.stderr, bad.stderr  # usage
    usage = handoff("reconcile", str(ledger), "db-19", "--reason", "x", world=world)
    assert usage.returncode == 2


def test_irreversible_step_proven_by_verify_is_recorded_not_rerun(tmp_path: Path) -> None:
    """A link left in flight that really happened: its verify proves it; link is never run again."""
    targets = {"db-19": {"state": "checked", "in_flight": _inflight("link", token="dead-session/aaaa")}}
    ledger = demo_copy(tmp_path, targets, budget={"steps": 1})
    world = tmp_path / "world"
    assert sim(world, "link", "db-19").returncode == 0  # the dead session's link did finish
    result = resume(ledger, "--max-steps", "1", world=world)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "its verify proves it happened" in result.stdout
    db19 = load(ledger)["targets"]["db-19"]
    assert db19["state"] in ("replicating", "verified", "awaiting_approval") and db19.get("in_flight") is None
    assert db19["checkpoint"] == sim(world, "lsn", "db-19").stdout.strip()
    assert counts(world)["db-19"]["link_runs"] == 1


def test_irreversible_step_not_proven_blocks_and_pages(tmp_path: Path) -> None:
    """A link left in flight that the probe cannot prove: blocked with the discrepancy, paged, never re-run."""
    targets = {"db-19": {"state": "checked", "in_flight": _inflight("link", token="dead-session/bbbb")}}
    ledger = demo_copy(tmp_path, targets)
    world = tmp_path / "world"
    result = resume(ledger, world=world)
    assert result.returncode == 0, result.stdout + result.stderr
    db19 = load(ledger)["targets"]["db-19"]
    assert db19["state"] == "blocked" and "never recorded" in db19["reason"] and "is not linked" in db19["reason"]
    assert db19["touched_at"]
    assert counts(world).get("db-19", {}).get("link_runs", 0) == 0
    assert "db-19: blocked" in (world / "pages.log").read_text()


def test_reversible_step_left_in_flight_runs_again(tmp_path: Path) -> None:
    """A check left in flight is cleared and simply run again."""
    targets = {"db-21": {"state": "queued", "in_flight": _inflight("check", token="dead-session/cccc")}}
    ledger = demo_copy(tmp_path, targets)
    world = tmp_path / "world"
    result = resume(ledger, world=world)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "db-21: check is reversible: intent cleared, it will run again" in result.stdout
    assert load(ledger)["targets"]["db-21"]["state"] in ("checked", "awaiting_approval")
    assert counts(world)["db-21"]["check_runs"] == 1


def test_a_step_still_running_is_waited_for(tmp_path: Path) -> None:
    """The dead session's link is still running (found by its token): wait for it, then verify."""
    world = tmp_path / "world"
    token = "dead-session/dddd"
    slow = {**env(world), "HANDOFF_SIM_SPEED": "1", "HANDOFF_STEP_TOKEN": token}
    step = subprocess.Popen([sys.executable, str(SIM), "link", "db-19"], env=slow, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        targets = {"db-19": {"state": "checked", "in_flight": _inflight("link", token=token)}}
        ledger = demo_copy(tmp_path, targets)
        result = resume(ledger, "--max-steps", "1", world=world)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"db-19: link is still running (pid {step.pid})" in result.stdout
        assert step.poll() is not None  # the session waited until it ended
        assert "its verify proves it happened" in result.stdout
        assert counts(world)["db-19"]["link_runs"] == 1
    finally:
        if step.poll() is None:
            step.kill()
        step.wait()


def test_failed_step_end_in_the_journal_marks_failed(tmp_path: Path) -> None:
    """The journal says the left-over irreversible step failed: the target is failed, not retried."""
    targets = {"db-19": {"state": "checked", "in_flight": _inflight("link", token="dead-session/eeee")}}
    ledger = demo_copy(tmp_path, targets)
    world = tmp_path / "world"
    from engine.audit.journal import Journal, journal_path

    Journal(journal_path(str(ledger))).append("step_end", "db-19: link failed", actor="agent:dead-session", target="db-19",
                                              step="link", exit_code=1, token="dead-session/eeee")
    result = resume(ledger, world=world)
    assert result.returncode == 0
    db19 = load(ledger)["targets"]["db-19"]
    assert db19["state"] == "failed" and "failed (exit 1)" in db19["reason"]
    assert counts(world).get("db-19", {}).get("link_runs", 0) == 0
