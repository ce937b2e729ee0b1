"""Which invariant statuses `handoff check` reports: the file's, and metrics only when asked.

`check` judges the file, so the same file gives the same answer at any hour: without
`--live` a metric invariant is not read at all (its status says how to read it), and no
reading a session journaled earlier is used, so a reading growing old can never turn CI
red on its own. How old the last reading is stays a runtime matter: `status`, the TUI
and the session show it. With `--live` each metric an invariant names is read now, by
running its command once (as a session would), and the invariant is judged on that.
"""

from __future__ import annotations

import time

from engine.ledger.invariants import InvariantStatus, evaluate, parse_all
from engine.ledger.model import Ledger

NOT_READ = "not read: `handoff check --live` runs the metric's command now"


def check_statuses(handle, ledger: Ledger, *, live: bool) -> tuple[list[InvariantStatus], list[str]]:
    """(each invariant's status, the metric reads that failed) for `check`; reads only with `live`."""
    if not live:
        statuses = evaluate(ledger, lambda _name: None)
        for s in statuses:
            if s.kind == "metric" and s.invariant is not None and s.invariant.metric in ledger.metrics:
                s.value = f"{s.invariant.metric} {NOT_READ}"
        return statuses, []
    from engine.session.probes import read_metric

    readings: dict[str, tuple[float, bool, float] | None] = {}
    failures: list[str] = []
    for inv in parse_all(ledger):
        if inv.kind != "metric" or not inv.metric or inv.metric in readings or inv.metric not in ledger.metrics:
            continue
        try:
            value, percent = read_metric(ledger, inv.metric, handle.ledger_dir)
            readings[inv.metric] = (value, percent, time.time())
        except ValueError as err:
            readings[inv.metric] = None
            failures.append(f"metric {inv.metric} could not be read now: {err}")
    return evaluate(ledger, readings.get), failures
