"""What tests/integration/test_{langgraph,temporal}_session_guards.py share: the guards a built-in
session keeps, asked of another runtime on the demo simulator's world (tests/unit/session_kit.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

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
