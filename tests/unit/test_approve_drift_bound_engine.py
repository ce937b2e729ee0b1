"""The engine binds an approval to the checkpoint drift the approver was shown (`expect_drift`).

A drift is a target's `reason` (engine.session.reconcile.verify_target) and in no approval
hash, so each surface passes what drift it showed: None for none, else its text. Under the
ledger's lock, `engine.ledger.ops.approve` (and the batch, per target) refuses when the
target's drift is no longer that, naming the target and saying to look again; a caller that
passes nothing (engine.api's own users, Temporal) is not bound to a drift, as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.api import DRIFT_UNCHECKED, ApprovalChanged, Refused, checkpoint_drift, open_ledger
from tests.conftest import engine_write
from tests.unit.test_batch_approve import FLEET, approvals, journal

DRIFT = ("checkpoint drift: the ledger says v1, `probe prod-1` says v9 (at 2026-11-29T02:58:00Z). "
         "Resolve with `handoff reconcile LEDGER prod-1 --accept-checkpoint --reason WHY` or `--to STATE --reason WHY`")
OTHER = DRIFT.replace("v9 (at 2026-11-29T02:58:00Z)", "v10 (at 2026-11-29T03:40:00Z)")


def _reason(name: str, reason: str | None):
    def change(ledger) -> None:  # as engine.session.reconcile.verify_target records it (or reconcile clears it)
        ledger.targets[name].reason = reason
    return change


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET.replace("prod-2: {state: checked", 'prod-2: {state: awaiting_approval, awaiting: cordon, '
                                  'awaiting_by: "agent:s1", awaiting_since: "2026-09-10T02:11Z"'), encoding="utf-8")
    return path


def test_a_drift_recorded_after_none_was_shown_is_refused_naming_the_target(fleet: Path) -> None:
    engine_write(fleet, _reason("prod-1", DRIFT))
    before = fleet.read_bytes()
    with pytest.raises(ApprovalChanged) as err:
        open_ledger(str(fleet), actor="alice").approve("prod-1", expect_drift=None)
    said = err.value.message
    assert said.startswith("prod-1: a checkpoint drift was recorded since you looked")
    assert "the ledger says v1" in said and "look again" in said and "Nothing was approved" in said
    assert fleet.read_bytes() == before and journal(fleet, "approval") == []


@pytest.mark.parametrize("now", [OTHER, None], ids=["another-drift", "reconciled"])
def test_a_drift_shown_that_moved_since_is_refused(fleet: Path, now: str | None) -> None:
    engine_write(fleet, _reason("prod-1", now))
    with pytest.raises(ApprovalChanged) as err:
        open_ledger(str(fleet), actor="alice").approve("prod-1", expect_drift=DRIFT)
    assert err.value.message.startswith("prod-1: ") and "look again" in err.value.message
    assert not approvals(fleet).get("prod-1") and journal(fleet, "approval") == []


def test_the_drift_shown_approves_anyway_and_no_binding_keeps_old_callers_working(fleet: Path) -> None:
    engine_write(fleet, _reason("prod-1", DRIFT))
    engine_write(fleet, _reason("prod-2", DRIFT.replace("prod-1", "prod-2")))
    handle = open_ledger(str(fleet), actor="alice")
    assert checkpoint_drift(handle.load().targets["prod-1"]) == DRIFT
    assert handle.approve("prod-1", expect_drift=DRIFT).by == "alice"  # shown, and said "anyway"
    assert handle.approve("prod-2").by == "alice"  # engine.api callers that pass nothing: unbound, as before
    assert len(journal(fleet, "approval")) == 2


def test_a_batch_with_one_drift_it_did_not_show_is_refused_whole(fleet: Path) -> None:
    handle = open_ledger(str(fleet), actor="alice")
    ledger = handle.load()
    expect = {n: handle.pending_command(ledger, n).hash for n in ("prod-1", "prod-2")}
    shown = {n: checkpoint_drift(ledger.targets[n]) for n in expect}  # none anywhere
    engine_write(fleet, _reason("prod-2", DRIFT.replace("prod-1", "prod-2")))
    with pytest.raises(Refused) as err:
        handle.approve_batch(expect, step="cordon", expect_drift=shown)
    said = err.value.message
    assert "nothing was approved" in said and "prod-2: a checkpoint drift was recorded since you looked" in said
    assert "prod-1:" not in said.split("refused: ", 1)[1]  # only the drifted one is named as refused
    assert not any(approvals(fleet).get(n) for n in expect) and journal(fleet, "approval") == []
    # Shown now (the batch listing with its warning), it goes through; unbound, as before, too.
    shown = {n: checkpoint_drift(handle.load().targets[n]) for n in expect}
    assert len(handle.approve_batch(expect, step="cordon", expect_drift=shown)) == 2


def test_the_sentinel_says_what_it_is() -> None:
    assert repr(DRIFT_UNCHECKED) == "DRIFT_UNCHECKED"
