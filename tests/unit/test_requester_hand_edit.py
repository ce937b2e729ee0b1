"""The requester's OS user comes from the engine's own gate record, not from a field anyone can edit."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
import yaml

from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


@pytest.mark.parametrize("edit", [None, "agent:nobody"], ids=["cleared", "agent"])
def test_the_requester_cannot_approve_after_editing_awaiting_by(tmp_path: Path, edit) -> None:
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "alias", "owner_shift": "test-oncall", "approvers": [{"name": "alice", "os_user": getpass.getuser()}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    asked = handoff("run", ledger, "db-19", "link", "--as", "robot")
    assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr

    # The person who asked edits who asked (same OS user: the file is theirs to write).
    data = yaml.safe_load(ledger.read_text())
    data["targets"]["db-19"]["awaiting_by"] = edit
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))

    approved = handoff("approve", ledger, "db-19", "--yes", "--as", "alice")
    assert approved.returncode != 0 and "someone else must approve" in approved.stdout + approved.stderr, \
        "the requester approved their own request:\n" + approved.stdout + approved.stderr
