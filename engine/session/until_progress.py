"""Progress of an `until` step: a 90-minute node roll is not silent until it ends.

While an `until` step waits, each reading is journaled as an `until_reading` record
(the first one at once, then at most one every HANDOFF_UNTIL_PROGRESS_EVERY seconds,
default 30) and printed in `handoff resume`'s output, with the time elapsed and the
deadline (the step's `timeout`). `latest` reads the newest one back for the running
step, for `handoff status` and the TUI (through `engine.api`).
"""

from __future__ import annotations

import time
from typing import Any

from engine.codec.timefmt import age_text, now_iso, parse_iso
from engine.ledger.model import Ledger, Step
from engine.settings import seconds


def every() -> float:
    """Seconds between two journaled readings (HANDOFF_UNTIL_PROGRESS_EVERY; 0: every reading)."""
    return seconds("HANDOFF_UNTIL_PROGRESS_EVERY")


def span(secs: float) -> str:
    """`1h05m`, `4m10s`, `12s`: elapsed time for people."""
    secs = int(max(0.0, secs))
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """`run_until`'s `on_reading` for one running step: journals its readings, throttled."""

    def __init__(self, out, target: str, step: Step, timeout: float) -> None:
        self.out = out
        self.target = target
        self.step = step
        self.timeout = timeout
        self.t0 = time.monotonic()
        self.deadline = now_iso(time.time() + timeout)
        self.every = every()
        self.last: float | None = None
        self.readings = 0

    def __call__(self, value: float) -> None:
        self.readings += 1
        now = time.monotonic()
        if self.last is not None and now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.t0
        self.out.say(f"{self.target}: {self.step.name} reading {value:g}, waiting for {self.step.until}; "
                     f"{span(elapsed)} elapsed of {span(self.timeout)}, deadline {self.deadline}",
                     target=self.target, kind="until_reading", step=self.step.name, value=value, until=self.step.until,
                     elapsed=round(elapsed, 1), timeout=self.timeout, deadline=self.deadline, readings=self.readings)


def latest(journal, ledger: Ledger, name: str, now: float | None = None) -> dict[str, Any] | None:
    """The newest reading of the `until` step running on `name` now: {target, step, value,
    until, at, elapsed (seconds since the step started), deadline, text}; None when no
    `until` step runs there or it has journaled no reading yet."""
    target = ledger.targets.get(name)
    flight = target.in_flight if target is not None else None
    step = ledger.step(flight.step) if flight is not None else None
    if flight is None or step is None or not step.until:
        return None
    record = journal.last_of("until_reading", target=name, step=step.name)
    started = parse_iso(flight.started_at)
    at = parse_iso(record.get("ts")) if record else None
    if record is None or (started is not None and at is not None and at < started):
        return None  # a reading of an earlier run of the step
    now = time.time() if now is None else now
    elapsed = now - started if started is not None else float(record.get("elapsed") or 0)
    value = record.get("value")
    shown = f"{value:g}" if isinstance(value, (int, float)) else str(value)
    text = (f"{name}: {step.name} reading {shown} ({age_text(now - at) if at else '?'} ago), waiting for {step.until}; "
            f"{span(elapsed)} elapsed, deadline {record.get('deadline') or '?'}")
    return {"target": name, "step": step.name, "value": value, "until": step.until, "at": record.get("ts"),
            "elapsed": round(elapsed, 1), "deadline": record.get("deadline"), "text": text}
