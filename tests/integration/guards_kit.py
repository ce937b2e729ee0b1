"""What tests/integration/test_{langgraph,temporal}_session_guards.py share: the guards a built-in
session keeps, asked of another runtime on the demo simulator's world (tests/unit/session_kit.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import counts, journal, load, wait_for  # noqa: E402

EXPIRE = 3.0  # seconds: the approval request's `expire_after` (demo_copy(..., approval_policy=EXPIRY))
EXPIRY = {"expire_after": f"{EXPIRE:g}s"}


def expires_then_refuses(ledger: Path, approve: Callable[..., subprocess.CompletedProcess]) -> None:
    """db-19 asks for link; its request expires while the runtime waits (the target is blocked, as a
    waiting session blocks it); a late `handoff approve` (run by `approve(*args)`) is refused."""
    wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval", 60, "db-19 to ask for link")
    wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] != "awaiting_approval", EXPIRE + 30, "db-19's request to expire")
    target = load(ledger)["targets"]["db-19"]
    assert (target["state"], target.get("reason")) == ("blocked", f"approval request expired after {EXPIRE:g}s"), target
    late = approve("approve", str(ledger), "db-19", "--yes", "--as", "human-oncall")
    assert late.returncode != 0, late.stdout + late.stderr  # nothing waits on an approval any more


def never_linked(ledger: Path, world: Path) -> None:
    """link never ran on db-19, and its request's expiry is in the journal."""
    assert counts(world)["db-19"]["link_runs"] == 0, counts(world)
    assert not [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "link"]
    assert any(r.get("kind") == "approval_expired" and r.get("target") == "db-19" for r in journal(ledger))


def hand_edit_db19(ledger: Path, note: Callable[..., subprocess.CompletedProcess]) -> None:
    """After an engine write (`note(*args)` runs `handoff note --set`), db-19 is hand-edited from
    queued to verified: it was never linked, and no runbook step makes that change."""
    assert note("note", str(ledger), "--set", "shift note").returncode == 0
    text = ledger.read_text()
    edited = text.replace("db-19:\n    state: queued", "db-19:\n    state: verified")
    assert edited != text, text
    ledger.write_text(edited)


def stopped_before_any_action(ledger: Path, code: int | None, out: str, err: str) -> None:
    """The run ended as a session does on a target changed outside the engine: exit 3, said, nothing
    started or gated, the states as the edit left them, the lease handed back."""
    data = load(ledger)
    assert code == 3, out + err
    assert "changed outside the engine" in out and "stopping before any action" in out, out
    assert {n: t["state"] for n, t in data["targets"].items()} == {"db-19": "verified", "db-21": "queued"}
    assert not [r for r in journal(ledger) if r.get("kind") in ("step_start", "gate")]
    assert data.get("session") is None


GATE = "import os, time\nwhile not os.path.exists(os.path.join('{ledger_dir}', 'go')): time.sleep(0.05)"  # until the test says


def gated_fleet(tmp: Path, targets: dict | None = None) -> Path:
    """db-01 and db-02 queued, db-03 blocked mid-change (or `targets`): db-03 and the first check
    started (each runs until the test's `go` file) take both places, so the other queued target
    stays queued; replicate leaves RAN-replicate-TARGET."""
    touch = ["{python}", "-c", "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"]
    path = tmp / "ledger.yaml"
    path.write_text(yaml.safe_dump({
        "task": "hand edit mid-run", "owner_shift": "test-oncall",
        "invariants": ["never touch more than 2 dbs concurrently"],
        "runbook": {"steps": [
            {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["{python}", "-c", GATE]},
            {"name": "link", "from": "checked", "to": "replicating", "run": [*touch, "{ledger_dir}/RAN-link-{target}"]},
            {"name": "replicate", "from": "replicating", "to": "verified", "reversible": True,
             "run": [*touch, "{ledger_dir}/RAN-replicate-{target}"]}]},
        "targets": targets or {"db-01": {"state": "queued"}, "db-02": {"state": "queued"},
                               "db-03": {"state": "blocked", "reason": "app team", "touched_at": "2026-12-07T19:00:00Z"}}},
        sort_keys=False), encoding="utf-8")
    return path


def _move_the_other_on(ledger: Path) -> str:
    """Once check runs on one queued target (the planner picks db-01 or db-02), the other is moved
    by hand from queued to replicating (check and link skipped). Returns the name moved."""
    started = wait_for(lambda: next((r["target"] for r in journal(ledger) if r.get("kind") == "step_start"
                                     and r.get("target") in ("db-01", "db-02")), None), 60, "check to start")
    moved = "db-02" if started == "db-01" else "db-01"
    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    data["targets"][moved]["state"] = "replicating"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return moved


def move_the_other_on_mid_run(ledger: Path, running: Callable[[], bool]) -> str:
    """The other queued target moved on by hand (`_move_the_other_on`); once a write has met the
    edit (or the run ended), the running check may end. Returns the name moved."""
    moved = _move_the_other_on(ledger)
    wait_for(lambda: any(r.get("kind") == "external_edit" for r in journal(ledger)) or not running(), 20,
             "the edit to be met by a write")
    (ledger.parent / "go").touch()
    return moved


def move_the_other_on_and_pause(ledger: Path, pause: Callable[..., subprocess.CompletedProcess]) -> str:
    """The other queued target moved on by hand (`_move_the_other_on`), then the ledger paused
    (`pause(*args)` runs `handoff pause`, whose write meets the edit): the run sees both at once.
    Then the running check may end. Returns the name moved."""
    moved = _move_the_other_on(ledger)
    paused = pause("pause", str(ledger), "--reason", "incident")
    assert paused.returncode == 0, paused.stdout + paused.stderr
    (ledger.parent / "go").touch()
    return moved


def stopped_on_the_mid_run_edit(ledger: Path, moved: str, code: int | None, out: str, err: str) -> None:
    """The run ended as a session does on a hand edit made while it runs: exit 3, the target `moved`
    named, nothing run on it, its edit kept and flagged."""
    assert code == 3, out + err
    assert f"{moved} was changed outside the engine" in out and f"handoff reconcile {shlex.quote(str(ledger))} {moved}" in out, out
    assert not (ledger.parent / f"RAN-replicate-{moved}").exists(), out
    assert not [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("target") == moved]
    after = load(ledger)["targets"][moved]
    assert after["state"] == "replicating" and after["changed_outside"]["fields"] == ["state"], after


def finish_the_only_target_by_hand(ledger: Path) -> None:
    """A gated fleet of db-01 alone (`gated_fleet(tmp, ONE)`): once its check runs, its intent is
    removed by hand and it is marked done. The step's end then writes nothing ("cleared by someone
    else") and nothing is left to do, so only the closing note's write meets the edit."""
    wait_for(lambda: any(r.get("kind") == "step_start" and r.get("target") == "db-01" for r in journal(ledger)), 60,
             "check to start on db-01")
    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    data["targets"]["db-01"].update(in_flight=None, state="done")
    ledger.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    (ledger.parent / "go").touch()


ONE = {"db-01": {"state": "queued"}}


def said_after_the_note(ledger: Path, code: int | None, out: str, err: str) -> None:
    """The run ended as a session does on a hand edit only its closing note's write met: db-01
    named with `handoff reconcile`, exit 3 (it said "nothing left to do: every target is done",
    exit 0), the edit kept and flagged, the lease handed back."""
    assert code == 3, out + err
    assert "db-01 was changed outside the engine" in out and "in_flight, state; now done" in out, out
    assert f"handoff reconcile {shlex.quote(str(ledger))} db-01" in out, out
    data = load(ledger)
    assert data["targets"]["db-01"]["changed_outside"]["fields"] == ["in_flight", "state"], data["targets"]["db-01"]
    assert data.get("session") is None


def remove_the_running_target(ledger: Path) -> str:
    """Once check runs on one queued target of a gated fleet (db-01 or db-02), that target is deleted
    from the file by hand; then its check may end. Every write after that is refused (the ledger
    shrank) until a person runs `handoff check --accept-removal`. Returns the name deleted."""
    started = wait_for(lambda: next((r["target"] for r in journal(ledger) if r.get("kind") == "step_start"
                                     and r.get("target") in ("db-01", "db-02")), None), 60, "check to start")
    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    del data["targets"][started]
    ledger.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    (ledger.parent / "go").touch()
    return started


def refused_as_a_session(removed: str, code: int | None, out: str, err: str) -> None:
    """The run ended as a session does on a ledger that shrank by hand: said, naming the target and
    `handoff check --accept-removal`, exit 2 ("it can never proceed as written")."""
    assert code == 2, out + err
    assert "session error:" in out and f"missing: {removed}" in out and "--accept-removal" in out, out + err
    assert "ended (exit 2)" in out, out
