"""Slack's Review approves nothing on a target changed outside the engine (engine.store.outside).

db-1 awaits its cutover and is flagged `changed_outside` (an approval written into the file by
hand). Approved from Slack, the approval was recorded beside the flag with no word of it, and
outlived the `handoff reconcile` that later cleared the flag. The engine's approve operation
refuses it, as for `handoff approve`: the approver is told in one line which target, what
changed and `handoff reconcile`; nothing is recorded and the ledger's bytes stay as they were.
"""

from __future__ import annotations

import json

from tests.slack.kit import ALICE, approved, ledger, posted, refused, review, wait_for

FLAG = "changed_outside: {at: '2026-12-07T20:00:00Z', fields: [approvals]}"


def test_a_target_changed_outside_the_engine_is_not_approved_from_slack(tmp_path, fake, signer, started):
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    posted(fake)
    view = review(app, fake, signer, ALICE)  # opened before the flag: a Review of a flagged target opens none
    path.write_text(path.read_text().replace("checkpoint: 0/9A3F2C10", f"checkpoint: 0/9A3F2C10\n    {FLAG}"))
    before = path.read_bytes()
    status, _ = signer.post(app.url, signer.submit(view, ALICE, "db-1"))
    assert status == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="a refusal")
    told = json.dumps(fake.ephemerals(ALICE), ensure_ascii=False)
    assert "db-1 was changed outside the engine at 2026-12-07T20:00:00Z (approvals; now awaiting_approval)" in told, told
    assert f"handoff reconcile {path} db-1 --to STATE --reason WHY" in told and "nothing was approved" in told, told
    assert not approved(path) and refused(path)
    assert path.read_bytes() == before
