"""A withdrawal's intent (journaled before the write: engine.api.JOURNALED_FIRST) as people see
it: the journal shows it as what it is, it is cancelled when the write does not happen (the
approval it named stays usable), and `show --at` after a write killed past its swap does not
list the withdrawn approval. Under a count, `status` does not count an approval by whoever asked.
Review helper's findings on this stop's own fixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from engine.api import open_ledger
from engine.approvals.witness import withdrawal
from tests.conftest import ROOT, cli_env, handoff, killed_at_failpoint, wait_paused
from tests.unit.test_requester_session_starter import _asked_by_a_session_of, _count_of_two
from tests.unit.test_withdrawal_unjournaled import _approved


def _kinds(ledger: Path) -> list[tuple[str, str | None]]:
    lines = Path(str(ledger) + ".journal.jsonl").read_text().splitlines()
    return [(r["kind"], r.get("approval_by")) for r in map(json.loads, lines) if "unapproval" in r["kind"] or "cancel" in r["kind"]]


def test_show_at_after_an_unapprove_killed_after_its_swap(tmp_path: Path) -> None:
    ledger, _ = _approved(tmp_path)
    killed_at_failpoint("after-ledger-swap", "unapprove", ledger, "db-19", "--as", "alice")
    assert not yaml.safe_load(ledger.read_text())["targets"]["db-19"].get("approvals")
    assert handoff("pause", ledger, "--reason", "lunch", "--as", "bob").returncode == 0  # the next write
    head = yaml.safe_load(ledger.read_text())["revision"]
    shown = handoff("show", ledger, "--at", str(head))
    assert shown.returncode == 0 and "link by alice" not in shown.stdout, shown.stdout + shown.stderr


def test_the_journal_shows_the_withdrawal_once_and_its_intent_as_one(tmp_path: Path) -> None:
    ledger, _ = _approved(tmp_path)
    assert handoff("unapprove", ledger, "db-19", "--as", "alice").returncode == 0
    said = [line for line in handoff("journal", ledger).stdout.splitlines() if "withdrawn by alice" in line]
    assert len(said) == 2 and ["about to write: " in line for line in said] == [True, False], said


def test_status_does_not_count_the_requesters_early_approval(tmp_path: Path) -> None:
    """alice approved ahead of time, then her session asked: none of the 2 people has approved yet."""
    ledger = _count_of_two(tmp_path)
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    _asked_by_a_session_of(ledger, "alice")
    status = handoff("status", ledger)
    assert "0 of 2 approvals" in status.stdout and "(alice)" not in status.stdout, status.stdout


def test_a_withdrawal_whose_write_was_refused_is_cancelled(tmp_path: Path) -> None:
    """bob's approve is paused inside its transaction, alice's early approval about to be
    withdrawn (its intent journaled next); db-20 is removed by hand under it, so its retry is
    refused (the ledger shrank). Nothing changed, and alice's approval is not a withdrawn one."""
    ledger = _count_of_two(tmp_path)
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    _asked_by_a_session_of(ledger, "alice")
    marker = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "db-19", "--yes", "--as", "bob"],
                            env=cli_env(HANDOFF_FAILPOINTS="before-first-records", HANDOFF_FAILPOINT_PAUSE=str(marker)),
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_paused(marker)
        data = yaml.safe_load(ledger.read_text())
        del data["targets"]["db-20"]
        ledger.write_text(yaml.safe_dump(data, sort_keys=False))
        os.unlink(marker)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "missing: db-20" in err, err
    (approval,) = open_ledger(str(ledger), read_only=True).load().targets["db-19"].approvals
    assert approval.by == "alice"  # nothing changed
    assert _kinds(ledger) == [("unapproval_intent", "alice"), ("intent_cancelled", None)]
    assert withdrawal(open_ledger(str(ledger), read_only=True).journal, "db-19", approval) is None
