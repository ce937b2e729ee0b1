"""`handoff approve` refuses a target changed outside the engine, until a person reconciles it.

prod-1 awaits approval of its irreversible cordon; then its file entry is edited by hand in
a way no runbook step makes (moved back to `checked`, or given an approval by hand). An
approval given now would be recorded beside the flag with no word of it, and would still
authorise the cordon after `handoff reconcile` cleared the flag. Refused instead, by the
engine's approve operation (every door: CLI, TUI, Slack, a batch): one line naming the
target, what changed and `handoff reconcile`, exit 1, the ledger's bytes unchanged, no
approval journaled. Once reconciled, it is approved as any target is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import handoff
from tests.unit.test_batch_approve import FLEET

HAND_APPROVAL = ('approvals: [{by: mallory, user: mallory, at: "2026-12-07T20:00:00Z", step: cordon, '
                 'hash: "0123456789abcdef"}], awaiting_since')
EDITS = {
    "state": ("{state: awaiting_approval,", "{state: checked,"),
    "approvals": ("awaiting_since", HAND_APPROVAL),
}


def _journaled(path: Path, kind: str) -> list[dict]:
    journal = Path(str(path) + ".journal.jsonl")
    return [r for r in map(json.loads, journal.read_text().splitlines()) if r["kind"] == kind] if journal.exists() else []


def _flagged_fleet(tmp_path: Path, field: str) -> Path:
    """FLEET as the engine wrote it (a pause and unpause), then prod-1 edited by hand: `field`."""
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET, encoding="utf-8")
    assert handoff("pause", path, "--reason", "setup", "--as", "alice").returncode == 0
    assert handoff("unpause", path, "--as", "alice").returncode == 0
    old, new = EDITS[field]
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("field", sorted(EDITS))
def test_approve_refuses_a_target_changed_outside_the_engine_until_it_is_reconciled(tmp_path: Path, field: str) -> None:
    """Refused both when the approve's own write is the one that meets the hand edit and once another
    write has flagged it; `handoff reconcile` by a person, then the approval is recorded."""
    path = _flagged_fleet(tmp_path, field)
    for _ in ("the edit met by this approve", "the edit flagged by an earlier write"):
        before = path.read_bytes()
        refused = handoff("approve", path, "prod-1", "--step", "cordon", "--as", "alice")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "prod-1 was changed outside the engine at " in refused.stderr, refused.stderr
        assert f"({field}; now " in refused.stderr and "nothing was approved" in refused.stderr, refused.stderr
        assert f"`handoff reconcile {path} prod-1 --to STATE --reason WHY`" in refused.stderr, refused.stderr
        assert refused.stderr.count("\n") == 1, refused.stderr  # one line
        assert path.read_bytes() == before and _journaled(path, "approval") == []
        assert handoff("pause", path, "--reason", "look", "--as", "alice").returncode == 0  # flags prod-1
        assert handoff("unpause", path, "--as", "alice").returncode == 0
        assert yaml.safe_load(path.read_text())["targets"]["prod-1"]["changed_outside"]["fields"] == [field]
    done = handoff("reconcile", path, "prod-1", "--to", "checked", "--reason", "checked by hand", "--as", "bob")
    assert done.returncode == 0, done.stdout + done.stderr
    given = handoff("approve", path, "prod-1", "--step", "cordon", "--as", "alice")
    assert given.returncode == 0, given.stdout + given.stderr
    assert "prod-1: cordon approved by alice" in given.stdout and len(_journaled(path, "approval")) == 1


def test_a_batch_holding_a_flagged_target_approves_nothing(tmp_path: Path) -> None:
    """`--targets 'prod-*'` with prod-1 flagged: the batch is refused naming prod-1 and `handoff reconcile`."""
    path = _flagged_fleet(tmp_path, "state")
    before = path.read_bytes()
    refused = handoff("approve", path, "--step", "cordon", "--targets", "prod-*", "--as", "alice", "--yes")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "prod-1: prod-1 was changed outside the engine" in refused.stderr, refused.stderr
    assert f"`handoff reconcile {path} prod-1 --to STATE --reason WHY`" in refused.stderr, refused.stderr
    assert path.read_bytes() == before and _journaled(path, "approval") == []
