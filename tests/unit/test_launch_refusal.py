"""The spawn-time approval check refuses an irreversible intent that names no approval.

`engine.approvals.authority.launch_refusal` runs under the fence's lock right before an
irreversible step's process starts. The guard gives such a step an approval, but the
fence does not take that on trust: with none, the spawn is refused with a sentence."""

from __future__ import annotations

from engine.approvals import authority
from engine.ledger.model import Approval, Ledger


def _ledger() -> Ledger:
    return Ledger.model_validate({"task": "t", "targets": {"db-1": {"state": "queued"}}})


def test_an_intent_with_no_approval_is_refused_at_the_spawn() -> None:
    why = authority.launch_refusal(None, _ledger(), "db-1", None)
    assert why == "the intent on db-1 names no approval to start its irreversible step under"


def test_an_approval_no_longer_on_the_target_is_refused_at_the_spawn() -> None:
    gone = Approval(step="promote", by="alice", user="alice", at="2026-09-10T02:00:00Z", hash="abc")
    why = authority.launch_refusal(None, _ledger(), "db-1", gone)
    assert why == "the approval of promote by alice at 2026-09-10T02:00:00Z is no longer in the ledger"
