"""Socket Mode end to end through the fake's websocket, and reminders and expiry
from the approval policy, in the request's thread and in place."""

from __future__ import annotations

import hashlib
import os

from tests.slack.kit import ALICE, approved, caught_up, iso, ledger, load, posted, refused, wait_for


def test_socket_mode_review_and_approve_through_the_websocket(tmp_path, fake, signer, started):
    """No HTTP endpoint: apps.connections.open hands out the fake's ws:// URL; the click and
    the submission arrive as envelopes, are acked, and approve once."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)], socket_mode=True)
    msg = posted(fake)
    wait_for(lambda: fake.of("apps.connections.open") and fake.sockets, what="the websocket")
    ack = fake.send_envelope(signer.click(msg, msg["ts"], ALICE))
    assert ack.get("envelope_id")
    wait_for(lambda: fake.views(), what="views.open")
    ack = fake.send_envelope(signer.submit(fake.views()[-1], ALICE, "db-1"))
    assert not ack.get("payload"), ack
    records = wait_for(lambda: approved(path), what="the approval")
    assert records[0]["via"] == "slack" and records[0]["actor"] == "alice"
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited")
    assert "connected to Slack in Socket Mode" in app.stderr()


def test_socket_mode_for_another_app_is_refused(tmp_path, fake, signer, started):
    """An envelope naming another app id decides nothing, in Socket Mode too."""
    path = ledger(tmp_path)
    started(fake, [str(path)], socket_mode=True)
    msg = posted(fake)
    fake.send_envelope(signer.click(msg, msg["ts"], ALICE, app_id="A0OTHER"))
    wait_for(lambda: refused(path), what="the refusal")
    assert not fake.views()


def test_a_reminder_is_threaded_under_the_request(tmp_path, fake, signer, started):
    """remind_after 1h, awaiting for 2h 10m: reminder 2 goes into the message's thread, once."""
    path = ledger(tmp_path, since=iso(2 * 3600 + 600), policy={"remind_after": "1h"})
    app = started(fake, [str(path)])
    msg = posted(fake)
    replies = wait_for(lambda: [p for p in fake.of("chat.postMessage") if p.get("thread_ts") == msg["ts"]],
                       what="the reminder")
    assert replies[0]["text"].startswith("reminder 2: db-1: cutover still awaits approval (2h)")
    caught_up(app, fake, signer)  # a whole pass of the worker (a look at the ledger) after the reminder
    assert len([p for p in fake.of("chat.postMessage") if p.get("thread_ts")]) == 1


def test_an_expired_request_is_marked_in_place_and_approves_nothing(tmp_path, fake, signer, started):
    """expire_after 1h, awaiting for 2h: the message says expired, has no buttons; a modal
    opened from an old copy of it approves nothing."""
    path = ledger(tmp_path, since=iso(7200), policy={"expire_after": "1h"})
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert "expired after 1h" in str(msg["blocks"]) and "handoff_review" not in str(msg["blocks"])
    live = dict(msg, blocks=msg["blocks"][:-1] + [{"type": "actions", "elements": [
        {"action_id": "handoff_review", "value": '{"l":"%s","t":"db-1","s":"cutover","h":"x","since":"y"}' % _key(path)}]}])
    assert signer.post(app.url, signer.click(live, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal")
    assert "expired after 1h" in fake.ephemerals(ALICE)[0]
    assert not approved(path) and load(path)["targets"]["db-1"]["state"] == "awaiting_approval"


def _key(path) -> str:
    """The ledger's key, as engine.slack.ledgers gives it."""
    return hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:12]
