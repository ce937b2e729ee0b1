"""A withdrawn (unapproved) verified approval, copied back into the YAML from its journal record, must not run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.ledger.model import Approval
from tests.conftest import cli_env, engine_write, handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"
APPROVAL_KEYS = ("by", "user", "at", "step", "hash", "checkpoint", "verified", "signed", "sig")


def _ledger(folder: Path, approver: dict) -> Path:
    (folder / "mark.py").write_text(MARK)
    data = {"task": "withdrawn", "owner_shift": "test-oncall", "approvers": [approver],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _records(ledger: Path) -> list[dict]:
    return [json.loads(line) for line in Path(str(ledger) + ".journal.jsonl").read_text().splitlines()]


def _os_user(tmp_path: Path) -> tuple[Path, list[str]]:
    import getpass

    return _ledger(tmp_path, {"name": "alice", "os_user": getpass.getuser()}), []


def _ssh_key(tmp_path: Path) -> tuple[Path, list[str]]:
    key = tmp_path / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@laptop", "-f", str(key)], check=True)
    return _ledger(tmp_path, {"name": "alice", "ssh_key": (tmp_path / "alice.pub").read_text().strip()}), ["--key", str(key)]


@pytest.mark.parametrize("make", [_os_user, _ssh_key], ids=["os_user", "ssh_key"])
def test_a_withdrawn_approval_copied_back_from_the_journal_never_runs(tmp_path: Path, make) -> None:
    ledger, extra = make(tmp_path)
    approved = handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice", *extra)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    withdrawn = handoff("unapprove", ledger, "db-19", "--as", "alice")
    assert withdrawn.returncode == 0, withdrawn.stdout + withdrawn.stderr
    assert not yaml.safe_load(ledger.read_text())["targets"]["db-19"].get("approvals")

    # The agent: the approval rebuilt from its journal record (no key, not alice's uid), written through the
    # engine's own code (a hand edit is flagged as one before anything acts: engine.store.outside).
    [record] = [r for r in _records(ledger) if r["kind"] == "approval"]
    entry = {k: record["actor" if k == "by" else k] for k in APPROVAL_KEYS if record.get("actor" if k == "by" else k)}
    engine_write(ledger, lambda led: led.targets["db-19"].approvals.append(Approval.model_validate(entry)))

    agent = cli_env(CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="agent-s1")
    ran = handoff("run", ledger, "db-19", "link", env=agent)
    assert not (tmp_path / "spawned-db-19").exists(), \
        "the approval alice withdrew authorised the irreversible step:\n" + ran.stdout + ran.stderr
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "approval withdrawn" in ran.stdout + ran.stderr, ran.stdout + ran.stderr


def test_a_withdrawn_approval_in_a_folder_restored_from_before_never_runs(tmp_path: Path) -> None:
    """The whole folder (ledger, journal, index) put back as it was before `unapprove`, and the
    rollback accepted by a person: the journal there never saw the withdrawal, but this user's
    high-water marks outside the folder did."""
    import shutil

    work = tmp_path / "work"
    work.mkdir()
    ledger = _ledger(work, {"name": "alice", "os_user": "nobody"})
    data = yaml.safe_load(ledger.read_text())
    del data["approvers"]  # plain names: the journal's record is the approval's only witness
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    backup = tmp_path / "backup"
    shutil.copytree(work, backup)
    assert handoff("unapprove", ledger, "db-19", "--as", "alice").returncode == 0
    shutil.rmtree(work)
    shutil.copytree(backup, work)  # the folder as it was, approval unused and no withdrawal in its journal
    accepted = handoff("check", ledger, "--accept-rollback", "--as", "bob")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    ran = handoff("run", ledger, "db-19", "link", "--as", "bob")
    assert not (work / "spawned-db-19").exists(), ran.stdout + ran.stderr
    assert ran.returncode != 0 and "already used or withdrawn" in ran.stdout + ran.stderr, ran.stdout + ran.stderr


def test_a_withdrawal_is_found_past_70_mib_of_later_journal(tmp_path: Path) -> None:
    """The withdrawal is a witness like the approval: found through the journal's index however
    much was journaled after it. (The run uses a fresh per-user state folder, so only the
    journal can refuse.)"""
    import os

    from engine.audit.journal import Journal

    ledger, _ = _os_user(tmp_path)
    data = yaml.safe_load(ledger.read_text())
    del data["approvers"]
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    held = yaml.safe_load(ledger.read_text())["targets"]["db-19"]["approvals"]
    assert handoff("unapprove", ledger, "db-19", "--as", "alice").returncode == 0
    chatty = Journal(str(ledger) + ".journal.jsonl")
    blob = "x" * (1024 * 1024)
    for i in range(70):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-20", output=blob)
    assert os.path.getsize(chatty.path) > 70 * 1024 * 1024
    # Written back as it was, through the engine's own code.
    engine_write(ledger, lambda led: led.targets["db-19"].approvals.extend(Approval.model_validate(a) for a in held))
    ran = handoff("run", ledger, "db-19", "link", "--as", "bob", env=cli_env(XDG_STATE_HOME=str(tmp_path / "fresh-state")))
    assert not (tmp_path / "spawned-db-19").exists(), ran.stdout + ran.stderr
    assert "approval withdrawn" in ran.stdout + ran.stderr, ran.stdout + ran.stderr
