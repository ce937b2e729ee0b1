"""Helpers shared by the TUI tests: the test fleet, a fixed clock, worker settling, screen text."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot
from textual.worker import WorkerFailed

FIXED_NOW = datetime(2026, 11, 29, 3, 0, 0, tzinfo=timezone.utc)
LEDGER = """\
# a small fleet for the TUI tests
task: tls-rotation
owner_shift: night-oncall
environment: production
started: 2026-11-28T22:00Z
invariants:
  - never run cutover on a db whose state != verified
  - never touch more than 2 dbs concurrently
targets:
  web-01: {state: done, changed_at: "2026-11-29T01:00:00Z"}
  web-02: {state: awaiting_approval, checkpoint: "0/9A3F2C10", awaiting: cutover, awaiting_by: agent, awaiting_since: "2026-11-29T02:50:00Z", changed_at: "2026-11-29T02:50:00Z", verified_at: "2026-11-29T02:49:00Z"}
  web-03: {state: failed, reason: "link failed halfway", evidence: {step: link, exit_code: 1, duration: 2.5, at: "2026-11-29T02:10:00Z"}, changed_at: "2026-11-29T02:10:00Z"}
  web-04: {state: blocked, reason: "ticket PLAT-1", changed_at: "2026-11-29T00:10:00Z"}
  web-05: {state: queued}
  web-06: {state: checked, evidence: {step: check, exit_code: 2, at: "2026-11-29T02:20:00Z"}}
  web-07: {state: failed, reason: "check failed", evidence: {step: check, exit_code: 1, at: "2026-11-29T02:30:00Z"}}
handoff_note: "Started web-02 at 02:40Z. Do NOT retry link on web-03 without looking."
handoff_note_by: bob
handoff_note_at: "2026-11-29T02:55:00Z"
runbook:
  steps:
    - {name: check, from: queued, to: checked, reversible: true, run: ["true", "{target}"]}
    - {name: link, from: checked, to: replicating, reversible: false, run: ["rotate", "--link", "{target}"]}
    - {name: replicate, from: replicating, to: verified, reversible: true, run: ["lag", "{target}"]}
    - {name: cutover, from: verified, to: done, reversible: false, run: ["cutover", "--target", "{target}", "--checkpoint", "{checkpoint}"], description: "move traffic; the old side is gone after this"}
"""


def fixed_clock() -> datetime:
    return FIXED_NOW


async def settle(pilot: Pilot, rounds: int = 20) -> None:
    """Wait until no worker runs and the message queue is drained (no sleeps)."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        running = [w for w in app.workers if w.is_running]
        if not running:
            await pilot.pause()
            if not [w for w in app.workers if w.is_running]:
                return
        try:
            await app.workers.wait_for_complete()
        except WorkerFailed:
            pass  # the app shows a worker's error in its error view; tests assert on that
    raise AssertionError(f"workers still running: {list(app.workers)}")


def journal_records(ledger: Path) -> list[dict]:
    """Every record of the ledger's journal (read through the engine)."""
    from engine.api import open_ledger

    records, _ = open_ledger(str(ledger), read_only=True).journal.read(0)
    return records


def screen_text(app: App) -> str:
    """Every line of the current screen as the terminal would show it."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)


async def wait_until(pilot: Pilot, predicate, timeout: float = 5.0, step: float = 0.05) -> None:
    """Let the app run until `predicate()` holds (live file watching has no worker to wait for)."""
    loops = int(timeout / step)
    for _ in range(loops):
        if predicate():
            return
        await pilot.pause(step)
    assert predicate(), "condition not reached in time"
