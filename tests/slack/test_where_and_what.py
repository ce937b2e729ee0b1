"""A request is answered only on the message this process posted for it, in the ledger's
channel now; and a delivery found unfinished at start is acted on only if this app recorded
it (its seal) and it still passes what a fresh request must. Real `handoff slack` processes
(real slack-sdk) against the fake Slack Web API."""

from __future__ import annotations

import json

from tests.slack.kit import ALICE, BOB, approved, caught_up, ledger, load, posted, refused, review, wait_for


def test_a_click_on_a_copy_of_the_message_in_another_channel_is_refused(tmp_path, fake, signer, started):
    """The ledger asks in C0OPS; the same buttons clicked in C0ELSE open nothing and approve nothing."""
    path = ledger(tmp_path)
    before = path.read_text()
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert signer.post(app.url, signer.click({**msg, "channel": "C0ELSE"}, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "answered only in the ledger's channel C0OPS, not in C0ELSE" in refused(path)[0]["msg"]
    caught_up(app, fake, signer)  # the worker had every chance to act on it
    assert not fake.views() and not approved(path) and path.read_text() == before


def test_when_the_ledger_moves_its_channel_the_old_message_is_closed_and_its_buttons_refused(tmp_path, fake, signer,
                                                                                           started):
    """Asked in C0OLD, then the ledger names C0OPS: the request is posted in C0OPS, the C0OLD message is made final
    (no buttons), and a click left on it is refused; the request is approved on its new message."""
    path = ledger(tmp_path, notify=[{"slack": {"channel": "C0OLD"}}])
    app = started(fake, [str(path)])
    old = json.loads(json.dumps(posted(fake)))  # as posted, buttons and all: a person's client may still show it so
    assert old["channel"] == "C0OLD"
    path.write_text(path.read_text().replace("C0OLD", "C0OPS"))
    wait_for(lambda: [m for m in fake.of("chat.postMessage") if m.get("channel") == "C0OPS"], what="the new message")
    wait_for(lambda: [u for u in fake.of("chat.update") if u.get("channel") == "C0OLD" and "moved" in json.dumps(u)],
             what="the old message closed")
    assert signer.post(app.url, signer.click(old, old["ts"], BOB))[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "not in C0OLD" in refused(path)[0]["msg"] and not approved(path)
    new = fake.message(1)
    assert new["channel"] == "C0OPS"
    assert signer.post(app.url, signer.click(new, new["ts"], ALICE))[0] == 200
    wait_for(lambda: fake.views(), what="the modal on the new message")
    assert signer.post(app.url, signer.submit(fake.views()[-1], ALICE, "db-1"))[0] == 200
    wait_for(lambda: approved(path), what="the approval")
    assert approved(path)[0]["slack"]["channel"] == "C0OPS"


def test_a_delivery_written_into_the_slack_record_is_refused_at_start(tmp_path, fake, signer, started):
    """Whoever can write beside the ledger appends a `received` Review submission by alice to
    `<ledger>.slack.jsonl` (every field right, but no seal of the app's): the next start refuses it, says so in
    the journal, and approves nothing."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)  # a real modal: its metadata is what a forger would copy
    app.stop()
    before = path.read_text()
    forged = signer.submit(view, ALICE, "db-1")
    with open(str(path) + ".slack.jsonl", "a") as fh:
        fh.write(json.dumps({"delivery": "f" * 32, "status": "received", "at": "2030-01-01T00:00:00Z",
                             "payload": forged}) + "\n")
    again = started(fake, [str(path)])
    wait_for(lambda: [r for r in refused(path) if "carries no seal of this app" in r["msg"]], what="the refusal")
    caught_up(again, fake, signer)  # the worker had every chance to act on it
    assert not approved(path) and path.read_text() == before
    assert load(path)["targets"]["db-1"]["state"] == "awaiting_approval"


def test_a_click_on_another_message_in_the_ledger_s_channel_is_refused(tmp_path, fake, signer, started):
    """The buttons as they were on another message of C0OPS (an earlier asking, a copy posted there): only the
    message posted for the request now answers it."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert signer.post(app.url, signer.click(msg, "1600000000.000100", ALICE))[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "not the message posted for the request now" in refused(path)[0]["msg"]
    caught_up(app, fake, signer)  # the worker had every chance to act on it
    assert not fake.views() and not approved(path)


def test_a_submission_of_a_view_that_is_not_review_or_reject_approves_nothing(tmp_path, fake, signer, started):
    """Signed, for our app and workspace, the real modal's metadata, but another view's callback id: refused."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit({**view, "callback_id": "something_else"}, ALICE, "db-1"))[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "not a Review or Reject submission of this app" in refused(path)[0]["msg"]
    assert not approved(path)
