"""Slack shows a drifted target's drift before it is approved (reviewer's TOCTOU report, section 4).

Slack approved a drifted target without a word of the drift.

Promise: README, Slack approvals: "One engineer can take a migration through its cutovers from
Slack, with the TUI's guarantees: the exact command and hash on screen, ..."; and the TUI's
(docs/operating.md, Approving): a target whose recorded checkpoint drifted "shows `≠ DRIFT`
... and the approval screen shows the mismatch and asks 'Approve anyway'"; `handoff approve`
prints a WARNING first and without a terminal approves it only with `--yes`.

What happens: engine/slack (blocks.py, decide.py, ledgers.request) never looks at the
target's drift: the request message and the Review modal show the command, checkpoint and
hash as for any target, and the submission records the approval. The person approving in
Slack is never told that the ledger and reality disagree on this target's checkpoint, the
checkpoint the approval is bound to."""

from __future__ import annotations

import json

from tests.slack.kit import ALICE, approved, ledger, posted, review, wait_for

DRIFT = ("checkpoint drift: the ledger says 0/9A3F2C10, `psql --host=db-1` says 0/9B000000 (at 2026-11-29T02:58:00Z). "
         "Resolve with `handoff reconcile LEDGER db-1 --accept-checkpoint --reason WHY` or `--to STATE --reason WHY`")


def test_a_drifted_target_is_not_approved_from_slack_unwarned(tmp_path, fake, signer, started):
    path = ledger(tmp_path)
    path.write_text(path.read_text().replace("checkpoint: 0/9A3F2C10", f"checkpoint: 0/9A3F2C10\n    reason: '{DRIFT}'"))
    assert DRIFT in path.read_text()
    app = started(fake, [str(path)])
    msg = posted(fake)
    view = review(app, fake, signer, ALICE)
    seen = (json.dumps(msg.get("blocks")) + json.dumps(view)).lower()
    status, _ = signer.post(app.url, signer.submit(view, ALICE, "db-1"))
    assert status == 200
    wait_for(lambda: approved(path) or fake.ephemerals(ALICE), what="an approval or a refusal")
    assert "drift" in seen or not approved(path), (
        "db-1 approved from Slack; neither the request message nor the Review modal said its checkpoint drifted")


def test_the_drift_shown_is_bound_a_review_that_showed_none_approves_nothing(tmp_path, fake, signer, started):
    """The message and the modal say the drift in the TUI's words, and the modal asks "anyway"; a submission of a
    modal that showed no drift (`d` missing: one opened before the drift, or before this version) is refused with an
    ephemeral reply, and nothing is recorded."""
    from engine.api import drift_line
    from tests.slack.kit import refused

    path = ledger(tmp_path)
    path.write_text(path.read_text().replace("checkpoint: 0/9A3F2C10", f"checkpoint: 0/9A3F2C10\n    reason: '{DRIFT}'"))
    app = started(fake, [str(path)])
    msg = posted(fake)
    view = review(app, fake, signer, ALICE)
    assert drift_line(DRIFT) in json.dumps(msg.get("blocks"), ensure_ascii=False)
    assert drift_line(DRIFT) in json.dumps(view, ensure_ascii=False)
    assert view["submit"]["text"] == "Approve anyway" and "approve it anyway" in json.dumps(view)
    meta = json.loads(view["private_metadata"])
    assert meta.get("d")
    del meta["d"]
    unshown = {**view, "private_metadata": json.dumps(meta, separators=(",", ":"))}
    status, _ = signer.post(app.url, signer.submit(unshown, ALICE, "db-1"))
    assert status == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="a refusal")
    assert "checkpoint drift changed" in json.dumps(fake.ephemerals(ALICE))
    assert not approved(path) and refused(path)
