"""Invariants hold on what the disk says when a step starts, not on what a run read earlier.

- An invariant garbled (or written in words the engine does not read) after a session
  started is not skipped: nothing starts past it (a session refuses to start on one).
- A pause threshold added between the metrics' reading and a step's intent is judged:
  the readings the session took judged other invariants, so it reads again.
- A reading that said ok but is older than its metric's `max_age` when a step starts
  (a slow pager between two proposals) proves nothing about now: read again.

Real processes on real files; edits land while a step runs (found in the journal) or at
the `before-intent` failpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, handoff, wait_paused
from tests.unit.session_kit import journal, wait_for


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _starts(ledger: Path) -> list[str]:
    return [r["target"] for r in journal(ledger) if r.get("kind") == "step_start"]


GATE = "import os, time\nwhile not os.path.exists(os.path.join('{ledger_dir}', 'go')): time.sleep(0.05)"  # fin: until the test says


def test_an_invariant_garbled_mid_run_stops_new_steps(tmp_path: Path) -> None:
    """a runs fin; b is blocked mid-change: 2 of 2 places taken, c is held. A person rewrites the
    limit as "two dbs" (not understood, so not enforced): c must not start while a and b hold it."""
    ledger = _write(tmp_path / "ledger.yaml", {
        "task": "garbled mid-run",
        "invariants": ["never touch more than 2 dbs concurrently"],
        "runbook": {"steps": [
            {"name": "prep", "from": "pending", "to": "prepped", "reversible": True, "run": ["true"]},
            {"name": "cut", "from": "prepped", "to": "cut", "run": ["true"]},
            {"name": "fin", "from": "cut", "to": "done", "reversible": True, "run": ["{python}", "-c", GATE]}]},
        "targets": {"a": {"state": "cut"},
                    "b": {"state": "blocked", "touched_at": "2026-01-01T00:00:00Z", "reason": "stuck"},
                    "c": {"state": "pending"}}})
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", str(ledger)], env=cli_env(),
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "a" in _starts(ledger), timeout=60, what="fin to start on a")
        text = ledger.read_text(encoding="utf-8")
        ledger.write_text(text.replace("more than 2 dbs", "more than two dbs"), encoding="utf-8")
        # fin runs on until the session has judged the garbled invariant while a and b hold both places
        # (its invariant check of the edited ledger, journaled): then it may end.
        wait_for(lambda: [r for r in journal(ledger) if r.get("kind") == "invariants" and "not understood" in r.get("msg", "")],
                 timeout=60, what="the session to judge the garbled invariant while fin runs on a")
        assert "c" not in _starts(ledger)
        (tmp_path / "go").touch()
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "c" not in _starts(ledger), out  # a (running fin), b (blocked, touched) and c: 3 touched
    data = yaml.safe_load(ledger.read_text())
    assert data["targets"]["c"]["state"] == "pending"
    note = data["handoff_note"]  # true: c is held by the invariant nobody can read, not "ready for prep"
    assert "ready for" not in note and '"never touch more than two dbs concurrently" is not understood' in note, note
    assert "c pending, held: prep (reversible)" in note, note


def test_a_pause_threshold_added_before_the_intent_is_judged(tmp_path: Path) -> None:
    """`handoff run` read the metric (1%) when no threshold named it; at its intent the ledger says
    "pause if error_rate_5m > 0.5%": the step does not run."""
    (tmp_path / "metric.txt").write_text("1%\n")
    ledger = _write(tmp_path / "ledger.yaml", {
        "task": "threshold mid-run",
        "invariants": ["never touch more than 2 dbs concurrently"],
        "metrics": {"error_rate_5m": {"run": ["cat", "{ledger_dir}/metric.txt"]}},
        "runbook": {"steps": [
            {"name": "prep", "from": "pending", "to": "prepped", "reversible": True,
             "run": ["touch", "{ledger_dir}/RAN"]}]},
        "targets": {"a": {"state": "pending"}}})
    marker = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "run", str(ledger), "a"],
                            env=cli_env(HANDOFF_FAILPOINTS="before-intent", HANDOFF_FAILPOINT_PAUSE=str(marker)),
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_paused(marker, limit=60)
        text = ledger.read_text(encoding="utf-8")
        ledger.write_text(text.replace("- never touch more than 2 dbs concurrently\n",
                                       "- never touch more than 2 dbs concurrently\n- pause if error_rate_5m > 0.5%\n"),
                          encoding="utf-8")
        os.unlink(marker)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (tmp_path / "RAN").exists(), out
    assert proc.returncode == 1, out
    assert "pause if error_rate_5m > 0.5%" in out
    assert yaml.safe_load(ledger.read_text())["targets"]["a"]["state"] == "pending"


PAGER = """\
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "metric.txt"), "w") as fh:
    fh.write("5%\\n")  # the error rate jumps while the page goes out
time.sleep(3)
"""


def test_a_reading_that_aged_past_max_age_before_the_intent_is_read_again(tmp_path: Path) -> None:
    """The session reads 0.1% (max_age 1 s), gates a (its page takes 3 s, and the rate jumps to 5%
    meanwhile), then proposes fin on b: the 0.1% is older than max_age, so it reads again and pauses."""
    (tmp_path / "metric.txt").write_text("0.1%\n")
    (tmp_path / "pager.py").write_text(PAGER)
    ledger = _write(tmp_path / "ledger.yaml", {
        "task": "aged reading",
        "invariants": ["pause if error_rate_5m > 0.5%"],
        "metrics": {"error_rate_5m": {"run": ["cat", "{ledger_dir}/metric.txt"], "max_age": 1}},
        "notify": [{"run": ["{python}", "{ledger_dir}/pager.py"], "on": ["approval_needed"]}],
        "runbook": {"steps": [
            {"name": "cut", "from": "pending", "to": "cut", "run": ["true"]},
            {"name": "fin", "from": "cut", "to": "done", "reversible": True, "run": ["touch", "{ledger_dir}/RAN"]}]},
        "targets": {"a": {"state": "pending"}, "b": {"state": "cut"}}})
    result = handoff("resume", ledger, timeout=120)
    assert any(r.get("kind") == "page" for r in journal(ledger)), result.stdout  # the slow page went out
    assert not (tmp_path / "RAN").exists(), result.stdout  # fin never ran on the 0.1% of before the page
    assert result.returncode == 4, result.stdout + result.stderr
    assert yaml.safe_load(ledger.read_text())["paused"] is not None
