"""A metric reading journaled by a host whose clock runs ahead (a PostgreSQL ledger shared by
hosts, an NTP step gone wrong) was shown as `ok (0s ago)` until its date plus max_age: the
age was `max(0, now - at)`. It is as far from now as a reading that old, and past max_age it
proves nothing about now. The writer is a separate process whose own clock is set ahead; the
reader is a real `handoff status` on this host's clock."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, cli_env, handoff

LEDGER = """\
task: skewed
invariants:
- pause if error_rate_5m > 0.5%
metrics:
  error_rate_5m: {run: [echo, "0.1%"], max_age: 60}
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: [echo, "{target}"]}
targets:
  db-1: {state: queued}
"""

_AHEAD = """
import sys, time
real = time.time
time.time = lambda: real() + float(sys.argv[2])  # this host's clock runs ahead
from engine.api import open_ledger
h = open_ledger(sys.argv[1], actor="host-b")
h.journal.append("metric", "error_rate_5m = 0.1%", actor="agent:host-b", metric="error_rate_5m", value=0.1, percent=True)
"""


def _status_of_threshold(ledger) -> dict:
    shown = handoff("status", ledger, "--json")
    assert shown.returncode == 0, shown.stderr
    (inv,) = [i for i in json.loads(shown.stdout)["invariants"] if "error_rate_5m" in i["text"]]
    return inv


def _journal_reading(ledger, ahead: float) -> None:
    done = subprocess.run([sys.executable, "-c", _AHEAD, str(ledger), str(ahead)], env=cli_env(), cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_reading_dated_two_hours_ahead_proves_nothing_now(tmp_path):
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    _journal_reading(ledger, 7200)
    inv = _status_of_threshold(ledger)
    assert inv["status"] == "unknown" and inv["stale"], inv
    assert "ahead of this clock" in inv["value"], inv


def test_a_reading_a_few_seconds_ahead_still_counts(tmp_path):
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    _journal_reading(ledger, 5)
    inv = _status_of_threshold(ledger)
    assert inv["status"] == "ok" and not inv["stale"], inv
