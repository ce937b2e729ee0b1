"""count: 2: whoever started the asking session is never one of the two people: not under
another name verified by the same OS user, not after editing `awaiting_by` out of the file, not
when the session's start lies 70 MiB back in the journal, and not through an approval given
ahead of time, before the session asked (review helper's findings)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def _count_of_two(tmp_path: Path, approvers: list | None = None) -> Path:
    """db-19's irreversible `link` needs two people; db-20 is done."""
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "alias", "owner_shift": "test-oncall",
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done", "approvals": {"count": 2},
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}, "db-20": {"state": "done"}}}
    if approvers is not None:
        data = {"approvers": approvers, **data}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    return ledger


def _asked_by_a_session_of(ledger: Path, starter: str) -> None:
    asked = handoff("resume", "--ledger", ledger, "--as", starter)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    target = yaml.safe_load(ledger.read_text())["targets"]["db-19"]
    assert target["state"] == "awaiting_approval" and target["awaiting_by"].startswith("agent:"), target


def _refused(ledger: Path, name: str) -> None:
    result = handoff("approve", ledger, "db-19", "--yes", "--as", name)
    assert result.returncode == 1 and "other than the requester" in result.stderr, \
        f"{name}, who started the asking session, counted as one of the two:\n" + result.stdout + result.stderr


def test_the_session_starter_cannot_approve_as_an_os_user_alias_under_a_count(tmp_path: Path) -> None:
    ledger = _count_of_two(tmp_path, [{"name": "alice", "os_user": getpass.getuser()}, "bob"])
    _asked_by_a_session_of(ledger, "robot")  # started by this OS user, under another name
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "robot").returncode == 1  # by name: refused
    _refused(ledger, "alice")  # the same OS user, under the approver's name, verified by that uid


@pytest.mark.parametrize("edit", [None, "agent:nobody"], ids=["cleared", "other-session"])
def test_the_session_starter_cannot_approve_after_editing_awaiting_by(tmp_path: Path, edit) -> None:
    """The journal's gate names the asking session, whatever the file's `awaiting_by` (hers to write) says."""
    ledger = _count_of_two(tmp_path, [{"name": "alice", "os_user": getpass.getuser()}, "bob"])
    _asked_by_a_session_of(ledger, "alice")
    _refused(ledger, "alice")
    data = yaml.safe_load(ledger.read_text())
    data["targets"]["db-19"]["awaiting_by"] = edit
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    _refused(ledger, "alice")


def test_the_session_starter_cannot_approve_after_70_mib_of_journal(tmp_path: Path) -> None:
    from engine.audit.journal import Journal

    ledger = _count_of_two(tmp_path)
    _asked_by_a_session_of(ledger, "alice")
    chatty = Journal(str(ledger) + ".journal.jsonl")  # other work's output since the ask
    blob = "x" * (1024 * 1024)
    for i in range(70):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-20", output=blob)
    assert os.path.getsize(chatty.path) > 70 * 1024 * 1024
    _refused(ledger, "alice")


def test_the_session_starters_approval_given_ahead_of_time_is_not_one_of_the_two(tmp_path: Path) -> None:
    ledger = _count_of_two(tmp_path)
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0  # 1 of 2
    _asked_by_a_session_of(ledger, "alice")
    _refused(ledger, "alice")
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "bob").returncode == 0
    target = yaml.safe_load(ledger.read_text())["targets"]["db-19"]
    assert target["state"] == "awaiting_approval" and "1 of 2 approvals (bob)" in target["next_action"], target
    handoff("resume", "--ledger", ledger, "--as", "carol")
    assert not (tmp_path / "spawned-db-19").exists(), "link ran with one person besides whoever started the asking session"
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "carol").returncode == 0
    ran = handoff("resume", "--ledger", ledger, "--as", "carol")
    assert (tmp_path / "spawned-db-19").exists(), ran.stdout + ran.stderr  # two others: it runs
    # bob and carol opened the gate and are spent with it; alice's was withdrawn, never spent
    approvals = yaml.safe_load(ledger.read_text())["targets"]["db-19"]["approvals"]
    assert sorted((a["by"], bool(a.get("used_at"))) for a in approvals) == [("bob", True), ("carol", True)], approvals


FAIL_ONCE = ("import sys, pathlib\nhere = pathlib.Path(__file__).parent\n"
             "(here / ('spawned-' + sys.argv[1])).open('a').write('ran\\n')\n"
             "flag = here / 'fail-once'\n"
             "if flag.exists():\n    flag.unlink(); sys.exit(1)\n")


def test_an_approval_that_opened_one_run_does_not_count_for_the_next(tmp_path: Path) -> None:
    """carol's approval opened the first run's gate (alice's early one withdrawn); after the run
    failed and was retried (same command, same checkpoint) one new person (dave) is not enough."""
    ledger = _count_of_two(tmp_path)
    (tmp_path / "mark.py").write_text(FAIL_ONCE)
    (tmp_path / "fail-once").write_text("")
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    _asked_by_a_session_of(ledger, "alice")
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "bob").returncode == 0
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "carol").returncode == 0
    first = handoff("resume", "--ledger", ledger, "--as", "erin")
    assert (tmp_path / "spawned-db-19").read_text().count("ran") == 1, first.stdout + first.stderr
    retried = handoff("retry", ledger, "db-19", "--as", "erin", "--force", "--reason", "checked: nothing happened")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    handoff("resume", "--ledger", ledger, "--as", "erin")  # asks again
    handoff("approve", ledger, "db-19", "--yes", "--as", "dave")
    handoff("resume", "--ledger", ledger, "--as", "erin")
    assert (tmp_path / "spawned-db-19").read_text().count("ran") == 1, \
        "the second run went ahead with one new approval (dave) and one from the first gate"
