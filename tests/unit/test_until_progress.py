"""`until` steps show progress: each reading is journaled (throttled) with the time elapsed and
the deadline, printed by `handoff resume`, and shown by `handoff status` while the step runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.conftest import ROOT, cli_env, handoff

# Prints a countdown kept in a file beside the ledger: START, START-1, ... one per run.
COUNTDOWN = textwrap.dedent("""\
    import os, sys
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, sys.argv[1] + ".count")
    n = int(open(path).read()) if os.path.exists(path) else int(sys.argv[2])
    open(path, "w").write(str(n - 1))
    print(n - 1)
""")

LEDGER = """\
task: node-roll
runbook:
  steps:
  - {{name: roll, from: queued, to: done, reversible: true, until: "value < 1", interval: {interval}, timeout: 600,
     run: [python3, "{{ledger_dir}}/countdown.py", "{{target}}", "{start}"]}}
targets:
  n1: {{state: queued}}
"""


def fleet(tmp_path: Path, start: int, interval: float = 0.05) -> Path:
    (tmp_path / "countdown.py").write_text(COUNTDOWN, encoding="utf-8")
    path = tmp_path / "fleet.yaml"
    path.write_text(LEDGER.format(start=start, interval=interval), encoding="utf-8")
    return path


def readings(path: Path) -> list[dict]:
    journal = Path(str(path) + ".journal.jsonl")
    if not journal.exists():
        return []
    return [r for r in map(json.loads, journal.read_text().splitlines()) if r.get("kind") == "until_reading"]


def test_every_reading_is_journaled_and_printed_with_elapsed_and_deadline(tmp_path: Path) -> None:
    """Throttle 0: readings 4, 3, 2, 1 are journaled and printed; 0 ends the wait (the step's own result)."""
    path = fleet(tmp_path, 5)
    result = handoff("resume", path, env=cli_env(HANDOFF_UNTIL_PROGRESS_EVERY="0"))
    assert result.returncode == 0, result.stdout + result.stderr
    got = readings(path)
    assert [r["value"] for r in got] == [4, 3, 2, 1]
    for r in got:
        assert r["target"] == "n1" and r["step"] == "roll" and r["until"] == "value < 1" and r["timeout"] == 600
        assert r["deadline"].endswith("Z") and r["elapsed"] >= 0
        assert f"n1: roll reading {r['value']:g}, waiting for value < 1; " in result.stdout
    assert "elapsed of 10m00s, deadline " + got[0]["deadline"] in result.stdout
    assert "roll reading 0 (value < 1 holds)" in result.stdout


def test_readings_are_throttled(tmp_path: Path) -> None:
    """With one journaled reading an hour, a wait of 9 readings journals only the first (the default is 30 s)."""
    path = fleet(tmp_path, 10)
    result = handoff("resume", path, env=cli_env(HANDOFF_UNTIL_PROGRESS_EVERY="3600"))
    assert result.returncode == 0, result.stdout + result.stderr
    got = readings(path)
    assert [(r["value"], r["readings"]) for r in got] == [(9, 1)]
    assert result.stdout.count("waiting for value < 1") == 1


def test_status_shows_the_running_steps_newest_reading(tmp_path: Path) -> None:
    """While the roll waits: `status` prints a `running:` line with the reading, the elapsed time and the deadline."""
    path = fleet(tmp_path, 100000, interval=0.2)
    session = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", str(path)], cwd=str(ROOT),
                               env=cli_env(HANDOFF_UNTIL_PROGRESS_EVERY="0"), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):  # the first reading; a loop bound, never a timing assertion
            if readings(path):
                break
            time.sleep(0.1)
        assert readings(path), "no reading was journaled"
        status = handoff("status", path)
        line = next((ln for ln in status.stdout.splitlines() if ln.startswith("running: n1: roll reading ")), None)
        assert line is not None, status.stdout
        assert "waiting for value < 1; " in line and " elapsed, deadline 20" in line
        data = json.loads(handoff("status", path, "--json").stdout)
        (item,) = data["progress"]
        assert item["target"] == "n1" and item["step"] == "roll" and item["until"] == "value < 1"
        assert isinstance(item["value"], float) and item["value"] < 100000 and item["deadline"].endswith("Z")
    finally:
        assert handoff("stop", path).returncode == 0
        out, _ = session.communicate(timeout=120)
    assert session.returncode == 0, out
    assert json.loads(handoff("status", path, "--json").stdout)["progress"] == []  # nothing runs now


def test_a_bad_throttle_setting_falls_back_to_the_default(tmp_path: Path) -> None:
    """HANDOFF_UNTIL_PROGRESS_EVERY=soon is not a number: the default (30 s) applies, and the session runs."""
    path = fleet(tmp_path, 6)
    result = handoff("resume", path, env=cli_env(HANDOFF_UNTIL_PROGRESS_EVERY="soon"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["value"] for r in readings(path)] == [5]
