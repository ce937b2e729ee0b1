"""Approving from Slack over HTTP: the whole path once, as an on-call engineer does it."""

from __future__ import annotations

from tests.slack.kit import ALICE, approved, journal, ledger, load, posted, review, wait_for


def test_review_type_name_approve_records_via_slack_and_edits_the_message(tmp_path, fake, signer, started):
    """Review, type the target's name, Approve: one approval `via: slack`, the message says who and the hash."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert msg["channel"] == "C0OPS"
    shown = str(msg["blocks"])
    assert "echo" in shown and "0/9A3F2C10" in shown and "PRODUCTION" in shown and "Review" in shown
    view = review(app, fake, signer, ALICE)
    status, body = signer.post(app.url, signer.submit(view, ALICE, "db-1"))
    assert status == 200 and body in ("", "null")
    records = wait_for(lambda: approved(path), what="the approval record")
    assert len(records) == 1 and records[0]["actor"] == "alice" and records[0]["via"] == "slack"
    assert records[0]["slack"] == {"user": ALICE, "team": "T0123", "channel": "C0OPS", "ts": msg["ts"]}
    target = load(path)["targets"]["db-1"]
    assert target["state"] == "verified"
    (a,) = target["approvals"]
    assert a["by"] == "alice" and a["via"] == "slack" and a["verified"] == "slack" and a["slack"]["user"] == ALICE
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited")
    assert a["hash"] in str(fake.message(0)["blocks"]) and "handoff_review" not in str(fake.message(0)["blocks"])
    wait_for(lambda: any("approved by alice" in t for t in fake.ephemerals(ALICE)), what="alice told")
    assert not [r for r in journal(path) if r["kind"] == "slack_refused"]


def test_a_wrong_name_typed_keeps_the_modal_open_and_approves_nothing(tmp_path, fake, signer, started):
    """Typing another name answers the modal with an error (as the TUI asks for the exact name)."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    status, body = signer.post(app.url, signer.submit(view, ALICE, "db-2"))
    assert status == 200 and '"response_action": "errors"' in body and "type db-1 exactly" in body
    assert not approved(path) and load(path)["targets"]["db-1"]["state"] == "awaiting_approval"
