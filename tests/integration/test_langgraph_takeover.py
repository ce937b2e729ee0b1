"""Review attack: two LangGraph runtimes on one ledger after a stale-lease takeover.

Runtime A waits on db-50's link approval and is frozen (SIGSTOP: a paused VM, a stopped
laptop). Its heartbeat goes stale, so runtime B takes the lease over, as the lease rules
allow. A human approves; B writes its intent for the irreversible `link` (frozen there by
the `after-intent` failpoint, to make the interleaving deterministic). Then A wakes.

A was taken over: like a built-in session (tests/unit/test_fencing.py) it must notice
and stop acting (exit 5) without touching the ledger; B then runs the approved link once
and records it. But every LangGraph runtime of a ledger uses the same holder id (the
thread id `handoff-<ledger id>`), so A's fence (`ledger.session.id == sid`), its
`holds()` and its heartbeat's takeover check all pass: A keeps acting as the holder,
settles B's live intent as if B were dead (blocking db-50 and burning the approval),
and/or hands off and releases B's lease.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer  # noqa: E402,F401
from session_kit import ROOT, counts, demo_copy, env, handoff, journal, load, wait_for  # noqa: E402

from tests.conftest import freeze_holding_no_lock, wait_stopped  # noqa: E402

STALE = "6"  # a heartbeat may be late by half of it (3 s) before a holder stops acting: a loaded CI machine's B took 2 s once


def _runtime(ledger: Path, url: str, world: Path, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--runtime",
                             "langgraph", "--checkpointer", url],
                            env={**env(world), "HANDOFF_LEASE_STALE_AFTER": STALE, **extra}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True)


def _waiting_records(ledger: Path) -> int:
    return sum(1 for r in journal(ledger) if r.get("kind") == "waiting")


def test_a_taken_over_langgraph_runtime_stops_acting(tmp_path: Path, checkpointer) -> None:
    url, _schema = checkpointer
    ledger = demo_copy(tmp_path, {"db-50": {"state": "checked"}})
    world = tmp_path / "world"
    a = _runtime(ledger, url, world)
    b = None
    try:
        wait_for(lambda: _waiting_records(ledger) == 1, 60, "runtime A to wait on the link's approval")
        assert load(ledger)["targets"]["db-50"]["state"] == "awaiting_approval"
        freeze_holding_no_lock(a.pid)  # A frozen while it waits
        time.sleep(float(STALE) + 1.5)  # A's heartbeat goes stale

        b = _runtime(ledger, url, world, HANDOFF_FAILPOINTS="after-intent")
        wait_for(lambda: (load(ledger).get("session") or {}).get("pid") == b.pid, 60, "runtime B to take the lease over")
        wait_for(lambda: _waiting_records(ledger) == 2, 60, "runtime B to wait on the link's approval")
        approved = handoff("approve", str(ledger), "db-50", "--yes", "--as", "human-oncall", world=world)
        assert approved.returncode == 0, approved.stdout + approved.stderr
        wait_stopped(b.pid, 60)  # B wrote its intent for link (the approval now used) and stops right after
        intent = load(ledger)["targets"]["db-50"]["in_flight"]
        assert intent["step"] == "link"
        holder = load(ledger)["session"]
        assert holder["pid"] == b.pid

        os.kill(a.pid, signal.SIGCONT)  # A wakes: it was taken over and must not act
        try:
            a_out, a_err = a.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            a.kill()
            a_out, a_err = a.communicate()
        after_a = load(ledger)
        said_a = a_out + a_err

        os.kill(b.pid, signal.SIGCONT)  # B goes on with the link it was approved for
        try:
            wait_for(lambda: counts(world).get("db-50", {}).get("link_runs", 0) >= 1
                     or b.poll() is not None, 30, "runtime B to run the link or end")
        except AssertionError:
            pass
        time.sleep(2)
        link_runs = counts(world).get("db-50", {}).get("link_runs", 0)

        # The taken-over runtime must not have changed the live holder's ledger.
        assert after_a.get("session") == holder, (
            f"A released/changed B's lease: session is now {after_a.get('session')!r}\nA said:\n{said_a[-3000:]}")
        assert after_a["targets"]["db-50"].get("in_flight") == intent, (
            f"A settled B's live intent: db-50 is now {after_a['targets']['db-50']!r}\nA said:\n{said_a[-3000:]}")
        assert a.returncode == 5, said_a[-3000:]
        # And the approved link runs exactly once, under B.
        if link_runs != 1:  # say what B said
            if b.poll() is None:
                b.kill()
            b_out, b_err = b.communicate(timeout=30)
            raise AssertionError(f"link ran {link_runs} times; db-50 is {load(ledger)['targets']['db-50']!r}\n"
                                 f"B (exit {b.returncode}) said:\n{(b_out + b_err)[-4000:]}")
    finally:
        for p in (a, b):
            if p is not None and p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                p.kill()
                p.wait(10)
