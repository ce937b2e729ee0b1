"""Used approvals stay used, even when the file goes back in time.

An editor's stale buffer, `git checkout` or a restore from backup can put back a ledger
that still holds an approval a session already used. The record of the last engine
write notices (lower revision, a lost step, metric or budget) and nothing acts until a
human accepts it; even then the journal, the second witness, never lets that approval
run the step again.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from session_kit import counts, demo_copy, handoff, journal, load, resume


def _linked_once(tmp_path: Path):
    """db-50 approved, a copy of the file taken, then a session runs link."""
    ledger = demo_copy(tmp_path, {"db-50": {"state": "checked"}}, budget={"steps": 1})
    world = tmp_path / "world"
    assert resume(ledger, world=world).returncode == 0
    assert handoff("approve", str(ledger), "db-50", "--as", "human-1", world=world).returncode == 0
    approved = ledger.read_bytes()
    ran = resume(ledger, world=world)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert counts(world)["db-50"]["link_runs"] == 1
    assert load(ledger)["targets"]["db-50"]["state"] == "replicating"
    return ledger, world, approved


def test_an_old_copy_put_back_is_refused_loudly_and_changes_nothing(tmp_path: Path) -> None:
    """The approved copy written back: check exits 1 naming the revision; a session refuses (exit 2); link ran once."""
    ledger, world, approved = _linked_once(tmp_path)
    ledger.write_bytes(approved)
    check = handoff("check", str(ledger), world=world)
    assert check.returncode == 1
    assert "went back in time" in check.stdout and "lower than the engine's last write" in check.stdout
    again = resume(ledger, world=world)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "went back in time" in again.stderr and "--accept-rollback" in again.stderr
    assert ledger.read_bytes() == approved
    assert counts(world)["db-50"]["link_runs"] == 1
    assert journal(ledger)[-1]["kind"] == "session_refused"


def test_after_the_rollback_is_accepted_the_journal_still_forbids_a_second_run(tmp_path: Path) -> None:
    """`check --accept-rollback` is journaled; the next session finds the approval's use in the journal and probes instead."""
    ledger, world, approved = _linked_once(tmp_path)
    ledger.write_bytes(approved)
    accepted = handoff("check", str(ledger), "--accept-rollback", "--as", "human-2", world=world)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert any(r["kind"] == "rollback_accepted" and "human-2" in r["msg"] for r in journal(ledger))
    assert load(ledger)["revision"] > yaml.safe_load(approved)["revision"] + 1  # never backwards
    third = resume(ledger, world=world)
    assert third.returncode == 0, third.stdout + third.stderr
    assert counts(world)["db-50"]["link_runs"] == 1
    assert "already started under the approval by human-1" in third.stdout
    target = load(ledger)["targets"]["db-50"]
    assert target["state"] in ("replicating", "verified") and target["checkpoint"]  # proved by its verify, not re-run
    assert target["approvals"][0]["used_at"]


def test_a_lost_step_metric_or_budget_is_refused_until_accepted(tmp_path: Path) -> None:
    """A hand edit that drops what the engine last wrote (step, metric, budget) is named by check and refused by a session."""
    ledger = demo_copy(tmp_path, {"db-50": {"state": "queued"}}, budget={"steps": 1})
    world = tmp_path / "world"
    assert handoff("pause", str(ledger), "--reason", "setup", world=world).returncode == 0
    assert handoff("unpause", str(ledger), world=world).returncode == 0
    data = load(ledger)
    data["runbook"]["steps"] = [s for s in data["runbook"]["steps"] if s["name"] != "link"]
    del data["budget"]
    data["metrics"] = {}
    data["invariants"] = [i for i in data["invariants"] if "error_rate" not in i]
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    before = ledger.read_bytes()
    check = handoff("check", str(ledger), "--json", world=world)
    assert check.returncode == 1
    problems = " ".join(json.loads(check.stdout)["problems"])
    assert "runbook step link" in problems and "metric error_rate_5m" in problems and "budget" in problems
    refused = resume(ledger, world=world)
    assert refused.returncode == 2 and "went back in time" in refused.stderr
    assert ledger.read_bytes() == before
    assert handoff("check", str(ledger), "--accept-rollback", world=world).returncode in (0, 1)
    assert "went back in time" not in handoff("check", str(ledger), world=world).stdout  # the rest is the runbook's own state
    assert any(r["kind"] == "rollback_accepted" for r in journal(ledger))
