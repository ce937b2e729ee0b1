"""count: 2: whoever started the asking session never approves it under another name verified by the same OS user."""

from __future__ import annotations

import getpass
from pathlib import Path

import yaml

from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def test_the_session_starter_cannot_approve_as_an_os_user_alias_under_a_count(tmp_path: Path) -> None:
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "alias", "owner_shift": "test-oncall",
            "approvers": [{"name": "alice", "os_user": getpass.getuser()}, "bob"],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done", "approvals": {"count": 2},
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    asked = handoff("resume", "--ledger", ledger, "--as", "robot")  # started by this OS user, under another name
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["state"] == "awaiting_approval"
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "robot").returncode == 1  # by name: refused

    # The same OS user, now under the approver's name, verified by that uid.
    approved = handoff("approve", ledger, "db-19", "--yes", "--as", "alice")
    assert approved.returncode != 0 and "other than the requester" in approved.stdout + approved.stderr, \
        "the session's starter counted as one of the two people:\n" + approved.stdout + approved.stderr
