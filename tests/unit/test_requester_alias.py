"""A person who asks (`handoff run --as robot`) never approves their own request under another name."""

from __future__ import annotations

import getpass
from pathlib import Path

import yaml

from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def test_the_requester_cannot_approve_under_another_name(tmp_path: Path) -> None:
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "alias", "owner_shift": "test-oncall", "approvers": [{"name": "alice", "os_user": getpass.getuser()}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))

    asked = handoff("run", ledger, "db-19", "link", "--as", "robot")
    assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr
    assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["awaiting_by"] == "robot"

    # The same OS user, now under the approver's name.
    approved = handoff("approve", ledger, "db-19", "--yes", "--as", "alice")
    assert approved.returncode != 0 and "someone else must approve" in approved.stdout + approved.stderr, \
        "the requester approved their own request:\n" + approved.stdout + approved.stderr
    assert not (tmp_path / "spawned-db-19").exists()
