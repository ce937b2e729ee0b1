"""The checkpointer's PostgreSQL going away under a running LangGraph runtime: a real
`handoff resume --runtime langgraph` process, its checkpointer reached through a TCP proxy
(tests/integration/pg_proxy.py) in front of the real PostgreSQL, killed mid-run.

- for good: the run waits HANDOFF_DB_OUTAGE_SECONDS, then ends with exit 6, a message
  naming the checkpointer, its handoff note and the lease given back; the ledger is
  consistent (nothing in flight, each step started at most once) and a later run on a
  working checkpointer finishes the fleet from the thread's last saved checkpoint;
- for a moment: the run reconnects, resumes the thread from its last saved checkpoint
  and drives the target to the end, each irreversible step started exactly once.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer, small_fleet  # noqa: E402,F401
from pg_proxy import CuttingProxy  # noqa: E402
from session_kit import counts, handoff, journal, load, wait_for  # noqa: E402
from test_langgraph_fleet import _approve_waiting, _runtime  # noqa: E402


@pytest.fixture
def proxy():
    made = CuttingProxy()
    yield made
    made.down()


def _via(proxy: CuttingProxy, url: str) -> str:
    return url.replace("postgresql://127.0.0.1/", f"postgresql://127.0.0.1:{proxy.port}/")


def _starts(ledger: Path) -> Counter:
    return Counter((r["target"], r["step"]) for r in journal(ledger) if r.get("kind") == "step_start")


def _drive(proc, ledger: Path, world: Path, timeout: float = 90) -> tuple[str, str]:
    """Approve what waits until the runtime exits; its (stdout, stderr)."""
    t0 = time.monotonic()
    while proc.poll() is None:
        assert time.monotonic() - t0 < timeout, "the runtime did not end"
        _approve_waiting(ledger, world)
        time.sleep(0.1)
    return proc.communicate()


def test_checkpointer_gone_for_good_ends_with_exit_6_and_the_ledger_consistent(tmp_path: Path, checkpointer, proxy) -> None:
    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    world = ledger.parent.parent / "world"
    proc = _runtime(ledger, _via(proxy, url), world, HANDOFF_DB_OUTAGE_SECONDS="1")
    try:
        wait_for(lambda: any(r.get("kind") == "step_end" for r in journal(ledger)), 60, "the first step to end")
        proxy.down()  # the checkpointer's server is gone: refused and cut, and it stays so
        out, err = _drive(proc, ledger, world)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 6, out + err
    assert "the checkpointer database became unreachable mid-run" in out, out
    assert "waiting up to 1 s for it (HANDOFF_DB_OUTAGE_SECONDS)" in out
    data = load(ledger)
    assert data.get("session") is None, "the lease was given back"
    assert not data["targets"]["db-19"].get("in_flight"), "a step was left in flight"
    note = data["handoff_note"]
    assert "the checkpointer database stayed unreachable" in note and "1s" in note, note
    assert "resumes from its last saved checkpoint" in note
    last = journal(ledger)[-1]
    assert last["kind"] == "session_end" and last["exit_code"] == 6
    assert set(_starts(ledger).values()) <= {1}
    # The checkpointer back (directly): the next run resumes the thread and finishes the target.
    again = _runtime(ledger, url, world)
    try:
        out, err = _drive(again, ledger, world)
    finally:
        if again.poll() is None:
            again.kill()
    assert again.returncode == 0, out + err
    assert load(ledger)["targets"]["db-19"]["state"] == "done"
    assert counts(world)["db-19"]["link_runs"] == 1 and counts(world)["db-19"]["cutover_runs"] == 1
    assert set(_starts(ledger).values()) == {1}, _starts(ledger)


def test_a_short_checkpointer_outage_is_ridden_out(tmp_path: Path, checkpointer, proxy) -> None:
    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    world = ledger.parent.parent / "world"
    proc = _runtime(ledger, _via(proxy, url), world, HANDOFF_DB_OUTAGE_SECONDS="30")
    try:
        wait_for(lambda: any(r.get("kind") == "step_end" for r in journal(ledger)), 60, "the first step to end")
        proxy.down()
        time.sleep(1.5)
        proxy.up()  # back on the same port
        out, err = _drive(proc, ledger, world)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    assert "the checkpointer database became unreachable mid-run" in out, out
    assert "the checkpointer database answers again; the thread resumes from its last saved checkpoint" in out
    assert load(ledger)["targets"]["db-19"]["state"] == "done"
    assert counts(world)["db-19"]["link_runs"] == 1 and counts(world)["db-19"]["cutover_runs"] == 1
    assert set(_starts(ledger).values()) == {1}, _starts(ledger)
