"""A person who asks (`handoff run --as robot`) never approves their own request under another
name verified by the same OS user: not after editing who asked out of the file, and not when
their gate lies far back in a long journal (who asked is read from the journal's own, indexed,
`gate` record)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import OlderEngine, handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def alias_ledger(tmp_path: Path) -> Path:
    """A ledger whose approver alice is this OS user; db-19's irreversible `link` not asked for yet."""
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "alias", "owner_shift": "test-oncall", "approvers": [{"name": "alice", "os_user": getpass.getuser()}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}, "db-20": {"state": "checked"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    return ledger


def _asked_by_robot(tmp_path: Path, run=handoff) -> Path:
    """alias_ledger, db-19 awaiting approval, asked by this same OS user as `robot`."""
    ledger = alias_ledger(tmp_path)
    asked = run("run", ledger, "db-19", "link", "--as", "robot")
    assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr
    assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["awaiting_by"] == "robot"
    return ledger


def _refused_as_alice(ledger: Path) -> None:
    approved = handoff("approve", ledger, "db-19", "--yes", "--as", "alice")
    assert approved.returncode != 0 and "someone else must approve" in approved.stdout + approved.stderr, \
        "the requester approved their own request:\n" + approved.stdout + approved.stderr
    assert not (ledger.parent / "spawned-db-19").exists()


def test_the_requester_cannot_approve_under_another_name(tmp_path: Path) -> None:
    _refused_as_alice(_asked_by_robot(tmp_path))


@pytest.mark.parametrize("edit", [None, "agent:nobody"], ids=["cleared", "agent"])
def test_the_requester_cannot_approve_after_editing_awaiting_by(tmp_path: Path, edit) -> None:
    ledger = _asked_by_robot(tmp_path)
    data = yaml.safe_load(ledger.read_text())
    data["targets"]["db-19"]["awaiting_by"] = edit  # the same OS user: the file is theirs to write
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    _refused_as_alice(ledger)


def test_the_requester_cannot_approve_under_another_name_after_70_mib_of_journal(tmp_path: Path) -> None:
    from engine.audit.journal import Journal

    ledger = _asked_by_robot(tmp_path)
    chatty = Journal(str(ledger) + ".journal.jsonl")  # a multi-day job: other targets' output after the gate
    blob = "x" * (1024 * 1024)
    for i in range(70):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-20", output=blob)
    assert os.path.getsize(chatty.path) > 70 * 1024 * 1024
    _refused_as_alice(ledger)


def test_the_requester_cannot_approve_under_another_name_asked_before_an_upgrade(tmp_path: Path) -> None:
    """Asked under stop 47's engine (1f1ddaf), whose index kept no `gate`, then a chatty step
    of it carried its index past the gate: this engine must not take that index as whole."""
    stop_47 = OlderEngine(tmp_path, "1f1ddaf").run
    ledger = _asked_by_robot(tmp_path, run=stop_47)
    journal = f"{ledger}.journal.jsonl"
    chatty = stop_47("-c", "import sys; from engine.audit.journal import Journal; "
                           "Journal(sys.argv[1]).append('log', 'replication progress', actor='step', target='db-20', "
                           "output='x' * 100_000)", journal)
    assert chatty.returncode == 0, chatty.stderr
    index = Path(journal + ".index").read_text()
    assert '"end"' in index and '"gate"' not in index, index  # the older index covers the gate, without it
    _refused_as_alice(ledger)
