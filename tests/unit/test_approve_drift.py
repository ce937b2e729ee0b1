"""Approving a target whose checkpoint drifted warns and asks: on a terminal the name typed
approves it anyway; elsewhere only --yes does, and without it nothing is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import handoff
from tests.unit.test_batch_approve import FLEET
from tests.unit.tty_kit import on_terminal

DRIFT = ("checkpoint drift: the ledger says v1, `probe prod-1` says v9 (at 2026-11-29T02:58:00Z). "
         "Resolve with `handoff reconcile LEDGER prod-1 --accept-checkpoint --reason WHY` or `--to STATE --reason WHY`")
WARNING = ("WARNING: prod-1's checkpoint drifted: the ledger says v1, `probe prod-1` says v9 (at 2026-11-29T02:58:00Z). "
           "Sessions refuse prod-1 until `handoff reconcile` records where it really is, approved or not")


@pytest.fixture
def drifted(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET.replace('awaiting_since: "2026-09-10T02:11Z"}', f'awaiting_since: "2026-09-10T02:11Z", reason: "{DRIFT}"}}'),
                    encoding="utf-8")
    return path


def approvals(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["targets"]["prod-1"].get("approvals", [])


def journaled(path: Path) -> list[dict]:
    journal = Path(str(path) + ".journal.jsonl")
    return [r for r in map(json.loads, journal.read_text().splitlines()) if r["kind"] == "approval"] if journal.exists() else []


def test_without_a_terminal_a_drifted_target_is_approved_only_with_yes(drifted: Path) -> None:
    before = drifted.read_bytes()
    refused = handoff("approve", drifted, "prod-1", "--as", "alice")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert WARNING in refused.stderr and "approve a drifted target on a terminal, or anyway with --yes" in refused.stderr
    assert drifted.read_bytes() == before and journaled(drifted) == []
    given = handoff("approve", drifted, "prod-1", "--as", "alice", "--yes")
    assert given.returncode == 0, given.stdout + given.stderr
    assert WARNING in given.stderr and "prod-1: cordon approved by alice" in given.stdout
    assert [a["by"] for a in approvals(drifted)] == ["alice"] and len(journaled(drifted)) == 1


def test_on_a_terminal_the_warning_comes_first_and_the_name_approves_it_anyway(drifted: Path) -> None:
    before = drifted.read_bytes()
    no = on_terminal("approve", drifted, "prod-1", "--as", "alice", typed="prod-2\n")
    assert no.returncode == 1 and WARNING in no.stderr and "Type prod-1 to approve it anyway" in no.stdout
    assert drifted.read_bytes() == before
    yes = on_terminal("approve", drifted, "prod-1", "--as", "alice", typed="prod-1\n")
    assert yes.returncode == 0, yes.stdout + yes.stderr
    assert WARNING in yes.stderr and len(journaled(drifted)) == 1


def test_an_expected_hash_does_not_skip_the_question(drifted: Path) -> None:
    """A script that saw the hash still has to say --yes for a drifted target."""
    status = json.loads(handoff("status", drifted, "--json").stdout)
    digest = status["awaiting"][0]["hash"]
    before = drifted.read_bytes()
    refused = handoff("approve", drifted, "prod-1", "--as", "alice", "--expect-hash", digest)
    assert refused.returncode == 1 and WARNING in refused.stderr and drifted.read_bytes() == before
    assert handoff("approve", drifted, "prod-1", "--as", "alice", "--expect-hash", digest, "--yes").returncode == 0


def test_a_batch_that_holds_a_drifted_target_warns_and_asks(drifted: Path) -> None:
    """The listing carries the warning under prod-1; without a terminal or --yes, nothing is approved."""
    before = drifted.read_bytes()
    refused = handoff("approve", drifted, "--step", "cordon", "--targets", "prod-*", "--as", "alice")
    assert refused.returncode == 1 and WARNING in refused.stdout and "the batch holds a drifted target" in refused.stderr
    assert drifted.read_bytes() == before
    assert handoff("approve", drifted, "--step", "cordon", "--targets", "prod-*", "--as", "alice", "--yes").returncode == 0
    assert len(journaled(drifted)) == 2


def test_a_target_that_did_not_drift_gets_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET, encoding="utf-8")
    result = handoff("approve", path, "prod-1", "--as", "alice")
    assert result.returncode == 0 and "WARNING" not in result.stderr, result.stderr
