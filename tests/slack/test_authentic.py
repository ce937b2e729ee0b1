"""Only Slack's own requests, for our app and our workspace, once each, decide anything."""

from __future__ import annotations

import time

from tests.fakes.slack_signer import Signer
from tests.slack.kit import ALICE, SECRET, approved, caught_up, ledger, load, posted, refused, review, wait_for


def _unchanged(path, before: str) -> None:
    assert path.read_text() == before, "the ledger on disk changed"


def test_a_bad_signature_is_refused_and_changes_nothing(tmp_path, fake, signer, started):
    """Signed with another secret: 401, a journal record and a line on stderr; nothing approved."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    before = path.read_text()
    payload = signer.submit(view, ALICE, "db-1")
    body = signer.body(payload)
    status, _ = signer.post(app.url, body=body, headers=signer.headers(body, secret="not-the-signing-secret"))
    assert status == 401
    wait_for(lambda: refused(path), what="the refusal record")
    assert "does not match the signing secret" in refused(path)[0]["msg"]
    wait_for(lambda: "refused a request" in app.stderr(), what="the refusal said on stderr")  # read by a thread
    caught_up(app, fake, signer)  # the worker had every chance to act on it
    assert not approved(path)
    _unchanged(path, before)


def test_a_request_signed_301_seconds_ago_is_refused(tmp_path, fake, signer, started):
    """A correctly signed request whose timestamp is 301 s old is a replay: refused."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    before = path.read_text()
    old = Signer(SECRET, clock=lambda: time.time() - 301)
    status, _ = old.post(app.url, old.submit(view, ALICE, "db-1"))
    assert status == 401
    wait_for(lambda: refused(path), what="the refusal record")
    assert "more than 300s" in refused(path)[0]["msg"]
    caught_up(app, fake, signer)
    assert not approved(path)
    _unchanged(path, before)


def test_the_same_body_twice_gives_one_approval(tmp_path, fake, signer, started):
    """Slack retrying (or anyone replaying within the window) the same submission: one approval."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    body = signer.body(signer.submit(view, ALICE, "db-1"))
    headers = signer.headers(body)
    assert signer.post(app.url, body=body, headers=headers)[0] == 200
    assert signer.post(app.url, body=body, headers=headers)[0] == 200
    wait_for(lambda: approved(path), what="the approval")
    wait_for(lambda: "received before" in app.stderr() or refused(path), what="the second delivery handled")
    caught_up(app, fake, signer)
    assert len(approved(path)) == 1
    assert len(load(path)["targets"]["db-1"]["approvals"]) == 1
    assert not refused(path), "the replay was decided again instead of dropped as a delivery already handled"
    assert "received before: not acted on again" in app.stderr()


def test_a_request_for_another_app_is_refused(tmp_path, fake, signer, started):
    """Signed right, but for another app id: refused, nothing approved."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    before = path.read_text()
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1", app_id="A0OTHER"))[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "not A0APP" in refused(path)[0]["msg"]
    caught_up(app, fake, signer)
    assert not approved(path)
    _unchanged(path, before)


def test_a_request_from_another_workspace_is_refused(tmp_path, fake, signer, started):
    """Signed right, for our app, but from workspace T0OTHER: refused, nothing approved."""
    path = ledger(tmp_path, approvers=[{"name": "alice", "slack": f"T0OTHER/{ALICE}"}])
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert signer.post(app.url, signer.click(msg, msg["ts"], ALICE, team="T0OTHER"))[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "not T0123" in refused(path)[0]["msg"]
    caught_up(app, fake, signer)
    assert not fake.views() and not approved(path)


def test_a_user_of_another_workspace_in_a_shared_channel_is_refused(tmp_path, fake, signer, started):
    """Slack Connect: the click is in our workspace's channel (`team.id` T0123) by a user of T0OTHER
    (`user.team_id`), the workspace approvers are matched by. Refused like any other workspace's request."""
    path = ledger(tmp_path, approvers=[{"name": "alice", "slack": f"T0OTHER/{ALICE}"}])
    before = path.read_text()
    app = started(fake, [str(path)])
    msg = posted(fake)
    click = signer.click(msg, msg["ts"], ALICE)
    click["user"]["team_id"] = "T0OTHER"
    assert signer.post(app.url, click)[0] == 200
    wait_for(lambda: refused(path), what="the refusal record")
    assert "workspace 'T0OTHER', not T0123" in refused(path)[0]["msg"]
    caught_up(app, fake, signer)
    assert not fake.views() and not approved(path)
    _unchanged(path, before)
