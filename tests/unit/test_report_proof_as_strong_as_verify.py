"""The auditor's report says a record is missing exactly when `handoff journal --verify` and
`handoff check` do: no false break after an ordinary `handoff run`, and no clean proof over
a journal they call cut (review `web`, findings 1 and 3)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import handoff

RUNBOOK = {"steps": [
    {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true"]},
    {"name": "link", "from": "checked", "to": "done", "run": ["true"]}]}


def _ledger(tmp_path: Path, data: dict) -> Path:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    return ledger


def _run_link(ledger: Path, target: str) -> None:
    """The ordinary person's path: run the reversible check, approve the irreversible link, run it."""
    for args in (("run", ledger, target), ("approve", ledger, target, "--yes", "--as", "alice"), ("run", ledger, target)):
        done = handoff(*args)
        assert done.returncode == 0, done.stdout + done.stderr


def test_report_after_an_ordinary_handoff_run_says_no_record_is_missing(tmp_path: Path) -> None:
    """Promise (docs/operating.md "For auditors"): the report's completeness proof says whether
    the hash chain verifies and exits 1 only on a break or a `journal_gap`; engine.checks.chain
    says "every engine write journals a record of its revision". Nothing was removed here.

    What happens: `handoff run` releases its lease with a ledger write (`revision N written:
    session`, engine/cli/run_cmd.py:71 -> engine/lease/leasing.py:release) that journals no
    record, so `verdict_of` (engine/checks/chain.py:_unjournaled), its writer gone (no grace to wait),
    calls the untouched journal cut short: the report says "chain verified: NO ... the records
    of the last write(s) were cut off the journal's end", "no record missing: NO", exit 1;
    `handoff journal --verify` and `handoff check` say BROKEN as well. Every audit after a
    `handoff run` is a false alarm (and a real cut can no longer be told from one)."""
    ledger = _ledger(tmp_path, {"task": "t", "runbook": RUNBOOK, "targets": {"db-1": {"state": "queued"}}})
    _run_link(ledger, "db-1")
    report = handoff("report", ledger, "--format", "json")
    proof = json.loads(report.stdout)["proof"]
    assert [r["target"] for r in json.loads(report.stdout)["rows"]] == ["db-1"]
    assert proof["chain_verified"] and proof["breaks"] == [], (
        f"nothing was removed from the journal, yet the report says it was cut: {proof['breaks']}")
    assert report.returncode == 0
    verify = handoff("journal", ledger, "--verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_report_sees_a_cut_journal_that_journal_verify_and_check_see(tmp_path: Path) -> None:
    """Promise (docs/operating.md): `.last-write.json` and friends: "Deleting them hides nothing";
    the index is "rebuilt from the journal if it is deleted"; the report's completeness proof
    says "whether the hash chain verifies ... exit 1 on either"; `handoff journal --verify` and
    `handoff check` call this very journal BROKEN ("the history journal beside it records the
    engine's write of revision 5, but the journal's newest record of a write is of revision 1").

    What happens: link ran on db-1 (approved by alice); the journal is cut from that run's
    `step_start` on, and the index and `.last-write.json` are deleted. `handoff report` has no
    row, says "chain verified: yes", "no record missing: yes" and exits 0: cmd_report uses
    `verdict_of` alone (engine/cli/report_cmd.py:79), never the history-journal comparison of
    engine/checks/chain.py:_journals/_behind_history that verify and check make. The auditor's
    proof is weaker than the operator's check of the same files."""
    ledger = _ledger(tmp_path, {"task": "t", "runbook": RUNBOOK, "targets": {"db-1": {"state": "checked"}}})
    assert handoff("approve", ledger, "db-1", "--yes", "--as", "alice").returncode == 0
    assert handoff("run", ledger, "db-1").returncode == 0
    journal = Path(f"{ledger}.journal.jsonl")
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "step_start")
    journal.write_text("".join(lines[:start]), encoding="utf-8")
    Path(f"{ledger}.last-write.json").unlink()
    Path(f"{ledger}.journal.jsonl.index").unlink()

    assert handoff("journal", ledger, "--verify").returncode == 1  # the operator's check sees the cut
    report = handoff("report", ledger, "--format", "json")
    body = json.loads(report.stdout)
    assert report.returncode == 1 and not body["proof"]["chain_verified"], (
        f"the run's records were cut off the journal; the report has {len(body['rows'])} rows and says "
        f"complete: {body['proof']}")
