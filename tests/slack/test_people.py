"""Who may approve from Slack: the `approvers:` table by id, never the requester, and
only what is still there to approve, exactly as the person saw it."""

from __future__ import annotations

import getpass
import threading
import time

import yaml

from tests.conftest import handoff
from tests.slack.kit import ALICE, APPROVERS, BOB, CAROL, approved, ledger, load, posted, refused, review, wait_for


def test_an_unmapped_slack_user_is_refused(tmp_path, fake, signer, started):
    """CAROL is in the workspace but not in `approvers:`: told so, journaled, nothing approved."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert signer.post(app.url, signer.click(msg, msg["ts"], CAROL))[0] == 200
    wait_for(lambda: fake.ephemerals(CAROL), what="the ephemeral refusal")
    assert "T0123/U0CAROL is not in this ledger's approvers" in fake.ephemerals(CAROL)[0]
    assert not fake.views()
    view = review(app, fake, signer, BOB)  # a modal someone else opened, submitted by CAROL
    before = path.read_text()
    assert signer.post(app.url, signer.submit(view, CAROL, "db-1"))[0] == 200
    wait_for(lambda: len(refused(path)) >= 2, what="the second refusal")
    assert not approved(path) and path.read_text() == before


def test_the_requester_cannot_approve_their_own_step(tmp_path, fake, signer, started):
    """db-1 was asked for by alice: her click and her submission are refused; bob's is not."""
    path = ledger(tmp_path, awaiting_by="alice")
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert signer.post(app.url, signer.click(msg, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal")
    assert "asked for this approval" in fake.ephemerals(ALICE)[0]
    view = review(app, fake, signer, BOB)
    before = path.read_text()
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: len(fake.ephemerals(ALICE)) >= 2, what="the second refusal")
    assert "asked for this approval" in fake.ephemerals(ALICE)[1]
    assert not approved(path) and path.read_text() == before
    assert signer.post(app.url, signer.submit(view, BOB, "db-1"))[0] == 200
    wait_for(lambda: approved(path), what="bob's approval")
    assert approved(path)[0]["actor"] == "bob"


def test_a_requester_cannot_approve_from_slack_as_their_os_user_alias(tmp_path, fake, signer, started):
    """robot asked from this OS user, alice's (`os_user` in her row): her click from Slack is
    refused as her CLI approval is, though Slack, not the OS user, verifies it (review helper)."""
    path = ledger(tmp_path, approvers=[{"name": "alice", "os_user": getpass.getuser(), "slack": f"T0123/{ALICE}"}, "ops"])
    data = load(path)
    data["targets"]["db-1"] = {"state": "verified", "checkpoint": "0/9A3F2C10"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    asked = handoff("run", path, "db-1", "cutover", "--as", "robot")
    assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr
    app = started(fake, [str(path)])
    msg = posted(fake)
    before = path.read_text()
    assert signer.post(app.url, signer.click(msg, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal")
    assert "someone else must approve it" in fake.ephemerals(ALICE)[0], fake.ephemerals(ALICE)
    assert not fake.views() and not approved(path) and path.read_text() == before


def test_a_hash_changed_between_post_and_click_is_refused_and_the_message_refreshed(tmp_path, fake, signer, started):
    """The checkpoint moved after the message was posted: "the command changed; review again",
    and the message shows the new hash; a modal opened before the change approves nothing either."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    old = posted(fake)
    view = review(app, fake, signer, ALICE)  # opened while it was still the old command
    old_hash = view["private_metadata"].split('"h":"')[1].split('"')[0]
    path.write_text(path.read_text().replace("0/9A3F2C10", "0/9A3F2C99"))
    assert signer.post(app.url, signer.click(old, old["ts"], BOB))[0] == 200
    wait_for(lambda: fake.ephemerals(BOB), what="the refusal")
    assert "the command changed; review again" in fake.ephemerals(BOB)[0]
    wait_for(lambda: "0/9A3F2C99" in str(fake.message(0)["blocks"]), what="the message refreshed")
    assert old_hash not in str(fake.message(0)["blocks"])
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal of the old modal")
    assert "the command changed; review again" in fake.ephemerals(ALICE)[0]
    assert not approved(path) and load(path)["targets"]["db-1"]["state"] == "awaiting_approval"


def test_two_approvers_at_once_one_wins_and_the_other_is_told(tmp_path, fake, signer, started):
    """alice and bob submit at the same moment: one approval; the other hears who won."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    views = {ALICE: review(app, fake, signer, ALICE), BOB: review(app, fake, signer, BOB)}
    threads = [threading.Thread(target=signer.post, args=(app.url, signer.submit(views[u], u, "db-1"))) for u in views]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for(lambda: approved(path), what="one approval")
    winner = approved(path)[0]["actor"]
    loser = BOB if winner == "alice" else ALICE
    wait_for(lambda: any("already approved by " + winner in t for t in fake.ephemerals(loser)), what="the loser told")
    time.sleep(0.5)
    assert len(approved(path)) == 1 and len(load(path)["targets"]["db-1"]["approvals"]) == 1


def test_approved_in_the_cli_then_clicked_in_slack_says_already_approved(tmp_path, fake, signer, started):
    """A person approves with `handoff approve`; a later click in Slack is told, and the message shows it."""
    me = getpass.getuser()
    path = ledger(tmp_path, approvers=[*APPROVERS, {"name": "ops", "os_user": me}])
    app = started(fake, [str(path)])
    msg = posted(fake)
    done = handoff("approve", str(path), "db-1", "--as", "ops", "--yes")
    assert done.returncode == 0, done.stderr
    assert signer.post(app.url, signer.click(msg, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the answer")
    assert "already approved by ops" in fake.ephemerals(ALICE)[0]
    wait_for(lambda: "approved by ops" in str(fake.message(0)["blocks"]), what="the message edited")
    assert len(approved(path)) == 1 and not fake.views()


def test_a_slack_only_approver_cannot_approve_from_the_cli(tmp_path):
    """alice's identity is her Slack id: `handoff approve --as alice` is refused, the ledger unchanged."""
    path = ledger(tmp_path)
    before = path.read_text()
    out = handoff("approve", str(path), "db-1", "--as", "alice", "--yes")
    assert out.returncode == 1 and "approves from Slack only" in out.stderr
    assert path.read_text() == before


def test_a_two_person_step_needs_alice_and_bob_and_says_how_far_it_got(tmp_path, fake, signer, started):
    """approvals: {count: 2}: alice's approval leaves the request open ("1 of 2 approvals (alice)"),
    her second try is refused, bob's completes it; the message names both."""
    path = ledger(tmp_path, policy={"count": 2})
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: "1 of 2 approvals (alice)" in str(fake.message(0)["blocks"]), what="the progress shown")
    assert "handoff_review" in str(fake.message(0)["blocks"]) and load(path)["targets"]["db-1"]["state"] == "awaiting_approval"
    again = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit(again, ALICE, "db-1"))[0] == 200
    wait_for(lambda: len(fake.ephemerals(ALICE)) >= 2, what="alice's second try answered")
    assert "already holds an unused approval of cutover by alice" in fake.ephemerals(ALICE)[-1]
    view = review(app, fake, signer, BOB)
    assert signer.post(app.url, signer.submit(view, BOB, "db-1"))[0] == 200
    wait_for(lambda: "approved by bob" in str(fake.message(0)["blocks"]), what="the message edited")
    assert "approved by alice" in str(fake.message(0)["blocks"])
    assert load(path)["targets"]["db-1"]["state"] == "verified" and len(approved(path)) == 2


def test_a_write_between_review_and_submit_asks_for_a_fresh_look(tmp_path, fake, signer, started):
    """Same command, but the ledger was written after the modal opened: nothing approved, "review again"."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    done = handoff("note", str(path), "--set", "shift change at 06:00")
    assert done.returncode == 0, done.stderr
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal")
    assert "the ledger changed since you looked (revision" in fake.ephemerals(ALICE)[0]
    assert not approved(path)
    again = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit(again, ALICE, "db-1"))[0] == 200
    wait_for(lambda: approved(path), what="the approval after a fresh look")
