"""`{state}` (docs/ledger.md: "`{state}` and any other field of the target: its value") in an
irreversible step's command: the approval shows, and binds, the command rendered while the
target is `awaiting_approval`; approving moves the target back to the step's `from` state, so
the command that would run (`checked`) is not the one shown, its hash never matches, and the
approval can never be used: every run asks again, for ever ("approve it ... then run it
again"). `handoff check --strict` says nothing of it.

Promise: "The approval screen shows the exact command that will run" (docs/operating.md,
Approving) and an approval is used by the next session ("cutover approved by alice; the next
session runs it"). Code: engine/ledger/render.py fields_for (every target field, `state`
included, at the moment of rendering) and engine/ledger/ops.py approve (state reset to
`the_step.from_` after the hash was taken)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from tests.conftest import cli_env, handoff

SCRIPT = "import sys, json; open(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')\n"


def test_an_approved_command_using_state_runs_as_shown(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    (tmp_path / "link.py").write_text(SCRIPT)
    data = {"task": "state-placeholder", "notify": [{"run": ["/bin/true"]}],
            "targets": {"a": {"state": "awaiting_approval", "awaiting": "link", "awaiting_by": "agent:s-1",
                              "awaiting_since": "2026-09-10T02:11:00Z"}}, "runbook": {"steps": [
                {"name": "link", "from": "checked", "to": "linked", "reversible": False,
                 "run": [sys.executable, "{ledger_dir}/link.py", str(runs), "--from-state={state}", "{target}"]}]}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))

    approved = handoff("approve", ledger, "a", "--as", "human-1", "--yes", env=env)
    assert approved.returncode == 0, approved.stderr
    shown = json.loads(next(line for line in approved.stdout.splitlines() if "argv:" in line).split("argv:", 1)[1])

    ran = handoff("run", ledger, "a", env=env)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0 and runs.exists(), f"the approval of {shown} was never used: exit {ran.returncode}: {said}"
    assert json.loads(runs.read_text().splitlines()[0]) == shown[3:]
