"""Fencing: a session spawns a step only while it provably still holds the ledger.

The adversary's scenario, automated: session A is frozen (SIGSTOP, at the instant after
it wrote the intent for an irreversible `link`); after the stale limit session B takes
over and blocks the target; a human reconciles and approves; session C runs `link`;
then A is woken. The simulator's world counts every `link` run before it acts.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from session_kit import counts, demo_copy, env, handoff, journal, load, resume, start, wait_for

from tests.conftest import wait_stopped

STALE = "2"


def _env(world: Path, **extra: str) -> dict[str, str]:
    return {**env(world), "HANDOFF_LEASE_STALE_AFTER": STALE, **extra}


def _run(*args: str, world: Path, **extra: str):
    import subprocess
    import sys

    from session_kit import ROOT

    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], env=_env(world, **extra),
                          capture_output=True, text=True, timeout=90, cwd=str(ROOT))


def _frozen_after_intent(tmp_path: Path):
    """db-50 checked with an approved link; session A frozen right after writing its intent."""
    import subprocess
    import sys

    from session_kit import ROOT

    ledger = demo_copy(tmp_path, {"db-50": {"state": "checked"}}, budget={"steps": 1})
    world = tmp_path / "world"
    first = resume(ledger, world=world)
    assert first.returncode == 0, first.stdout + first.stderr
    assert load(ledger)["targets"]["db-50"]["state"] == "awaiting_approval"
    assert handoff("approve", str(ledger), "db-50", "--as", "human-1", world=world).returncode == 0
    a = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger)],
                         env=_env(world, HANDOFF_FAILPOINTS="after-intent"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True)
    wait_stopped(a.pid, 30)  # session A frozen after its intent
    target = load(ledger)["targets"]["db-50"]
    assert target["in_flight"]["step"] == "link"
    time.sleep(float(STALE) + 1)  # A's heartbeat goes stale
    return ledger, world, a


def _wake(a) -> tuple[int, str]:
    os.kill(a.pid, signal.SIGCONT)
    out, err = a.communicate(timeout=60)
    return a.returncode, out + err


def test_a_frozen_session_never_runs_link_after_a_takeover_and_a_human_decision(tmp_path: Path) -> None:
    """A frozen after its intent; B takes over and blocks; a human reconciles and approves; C runs link; A wakes: link ran once."""
    ledger, world, a = _frozen_after_intent(tmp_path)
    b = _run("resume", "--ledger", str(ledger), world=world)
    assert b.returncode == 0, b.stdout + b.stderr
    assert "took over the lease" in b.stdout
    assert load(ledger)["targets"]["db-50"]["state"] == "blocked"
    reconciled = _run("reconcile", str(ledger), "db-50", "--to", "checked", "--reason", "link never ran (world says unlinked)",
                      "--as", "human-2", world=world)
    assert reconciled.returncode == 0, reconciled.stderr
    # The first approval was used by A's intent; the human approves again.
    assert _run("approve", str(ledger), "db-50", "--as", "human-2", "--step", "link", world=world).returncode == 0
    c = _run("resume", "--ledger", str(ledger), world=world)
    assert c.returncode == 0, c.stdout + c.stderr
    assert counts(world)["db-50"]["link_runs"] == 1
    code, said = _wake(a)
    assert code == 5, said
    assert counts(world)["db-50"]["link_runs"] == 1
    assert "link NOT started" in said and "no longer holds the lease" in said
    assert any(r["kind"] == "fenced" and r.get("target") == "db-50" for r in journal(ledger))


def test_a_frozen_session_never_runs_link_on_a_target_the_ledger_says_is_blocked(tmp_path: Path) -> None:
    """Without any human: B blocks the target; A wakes and must not run link while the ledger says blocked."""
    ledger, world, a = _frozen_after_intent(tmp_path)
    b = _run("resume", "--ledger", str(ledger), world=world)
    assert b.returncode == 0, b.stdout + b.stderr
    assert load(ledger)["targets"]["db-50"]["state"] == "blocked"
    before = load(ledger)
    code, said = _wake(a)
    assert code == 5, said
    assert counts(world).get("db-50", {}).get("link_runs", 0) == 0
    after = load(ledger)
    assert after["targets"]["db-50"] == before["targets"]["db-50"]


def test_a_humans_decision_wins_over_a_step_that_finishes_later(tmp_path: Path) -> None:
    """A step whose intent a human (or another holder) cleared meanwhile is journaled, never recorded over their decision."""
    from session_kit import tool, tool_ledger

    from engine.api import open_ledger

    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "timeout": 30,
              "run": tool("sleep", "3")}]
    ledger = tool_ledger(tmp_path, steps, {"a": {"state": "queued"}})
    session = start("resume", "--ledger", str(ledger), world=tmp_path)
    wait_for(lambda: (load(ledger)["targets"]["a"].get("in_flight") or {}).get("pid"), what="the step to start")

    def human(ledger_):
        t = ledger_.targets["a"]
        t.in_flight = None
        t.state, t.reason = "blocked", "human: the app team froze this one"

    open_ledger(str(ledger), actor="human").store.transact(human)
    out, err = session.communicate(timeout=60)
    target = load(ledger)["targets"]["a"]
    assert target["state"] == "blocked" and target["reason"] == "human: the app team froze this one", out + err
    assert any(r["kind"] == "discrepancy" and "cleared by someone else" in r["msg"] for r in journal(ledger))
