"""`handoff run` trusts a target changed outside the engine no more than a session does (review
helper): a person's block removed by hand, then `handoff run` on that target, exits 3 naming
the change and how to accept it, and the step never starts. Real processes and files."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('ran-' + sys.argv[1]).write_text('ran')\n"


def test_a_block_removed_by_hand_is_not_run_through(tmp_path: Path) -> None:
    (tmp_path / "mark.py").write_text(MARK)
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump({
        "task": "blocked by a person", "owner_shift": "test-oncall",
        "runbook": {"steps": [{"name": "check", "from": "queued", "to": "checked", "reversible": True,
                               "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
        "targets": {"db-20": {"state": "queued"}, "db-21": {"state": "queued"}}}, sort_keys=False))
    blocked = handoff("block", ledger, "db-20", "--reason", "pending app-team ack")
    assert blocked.returncode == 0, blocked.stdout + blocked.stderr
    data = yaml.safe_load(ledger.read_text())
    data["targets"]["db-20"] = {"state": "queued"}  # the block taken off by hand
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    ran = handoff("run", ledger, "db-20", "check")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert "db-20 was changed outside the engine" in ran.stdout, ran.stdout
    assert f"handoff reconcile {shlex.quote(str(ledger))} db-20" in ran.stdout, ran.stdout
    assert not (tmp_path / "ran-db-20").exists()
    after = yaml.safe_load(ledger.read_text())["targets"]["db-20"]
    assert after["state"] == "queued" and after.get("changed_outside"), after
