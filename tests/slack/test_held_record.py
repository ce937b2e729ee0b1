"""A Slack record whose lock a stopped process holds: the approval's request is not taken
(HTTP 503, or no ack in Socket Mode; one line naming the holder; nothing recorded or
approved), and Slack's retry of the same request, once the holder is gone, approves exactly once."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import stopped_holder
from tests.slack.kit import ALICE, approved, ledger, load, posted, review, wait_for


def test_a_held_slack_record_refuses_the_request_and_slacks_retry_approves_once(tmp_path, fake, signer, started):
    path = ledger(tmp_path)
    app = started(fake, [str(path)], env={"HANDOFF_LOCK_TIMEOUT": "1"})
    view = review(app, fake, signer, ALICE)
    body = signer.body(signer.submit(view, ALICE, "db-1"))
    headers = signer.headers(body)
    record = Path(str(path) + ".slack.jsonl")
    before = record.read_bytes()
    with stopped_holder(record) as holder:
        status, _ = signer.post(app.url, body=body, headers=headers, timeout=30)
        assert status == 503
        line = wait_for(lambda: next((x for x in app.lines if "a request was not taken" in x), None),
                        what="the refusal said")
        assert line.startswith("handoff slack: a request was not taken; Slack sends it again: ")
        assert f"its lock has been held for more than 1s by pid {holder.pid}" in line and "nothing was recorded" in line
        assert "Traceback" not in app.stderr()
        assert record.read_bytes() == before and not approved(path)
    assert signer.post(app.url, body=body, headers=headers)[0] == 200  # Slack's retry of the same request
    wait_for(lambda: approved(path), what="the approval")
    assert len(approved(path)) == 1 and len(load(path)["targets"]["db-1"]["approvals"]) == 1


def test_in_socket_mode_a_held_slack_record_is_not_acknowledged_and_the_envelope_sent_again_approves_once(
        tmp_path, fake, signer, started):
    path = ledger(tmp_path)
    app = started(fake, [str(path)], socket_mode=True, env={"HANDOFF_LOCK_TIMEOUT": "1"})
    msg = posted(fake)
    wait_for(lambda: fake.of("apps.connections.open") and fake.sockets, what="the websocket")
    fake.send_envelope(signer.click(msg, msg["ts"], ALICE))
    view = wait_for(lambda: fake.views(), what="views.open")[-1]
    record = Path(str(path) + ".slack.jsonl")
    before = record.read_bytes()
    with stopped_holder(record) as holder:
        first = fake.send_envelope(signer.submit(view, ALICE, "db-1"), wait=False)
        line = wait_for(lambda: next((x for x in app.lines if "a request was not taken" in x), None),
                        what="the refusal said")  # said by the envelope's handler once it gave up on the record
        assert f"its lock has been held for more than 1s by pid {holder.pid}" in line
        assert "Traceback" not in app.stderr()
        assert record.read_bytes() == before and not approved(path)
    ack = fake.send_envelope(signer.submit(view, ALICE, "db-1"))  # Slack sends it again: this one is acked
    assert ack["envelope_id"] != first
    wait_for(lambda: approved(path), what="the approval")
    assert first not in fake.acked, "the envelope whose delivery could not be stored was acked"  # no ack: sent again
    assert len(approved(path)) == 1 and len(load(path)["targets"]["db-1"]["approvals"]) == 1
