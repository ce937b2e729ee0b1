"""Review (slack): a request message says what became of its request, and says it only once
the request is over. While the request still stands (the same step, asked at the same time) the
message is never closed for good: when the command cannot be rendered for a moment (a runbook
edited in two saves), the message says so, and shows the request again, buttons and all, once
it can be; else the request waits with nothing in Slack to answer it."""

from __future__ import annotations

import getpass

import yaml

from tests.conftest import handoff
from tests.slack.kit import ALICE, APPROVERS, approved, caught_up, ledger, load, posted, review, wait_for


def _run(path, run: list[str]) -> None:
    data = load(path)
    data["runbook"]["steps"][0]["run"] = run
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_command_that_cannot_render_for_a_moment_is_asked_again_when_it_can(tmp_path, fake, signer, started):
    """The runbook's cutover is edited to use `{host}` before db-1 has a `host`: the message says the
    command cannot be shown now (no buttons, not "the request below", which is not there). Once db-1
    gets its host, the same request (db-1 still awaits cutover, asked at the same time) is back on
    its message with the new command and the Review button, and alice approves it from Slack."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    posted(fake)
    _run(path, ["echo", "cutover", "{target}", "{host}"])
    wait_for(lambda: "handoff_review" not in str(fake.message(0)["blocks"]), what="the message without buttons")
    shown = str(fake.message(0)["blocks"])
    assert "cannot be shown now" in shown and "handoff check" in shown, shown
    assert "the request below" not in shown, shown
    data = load(path)
    data["targets"]["db-1"]["host"] = "pg-a.internal"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    caught_up(app, fake, signer)
    wait_for(lambda: "pg-a.internal" in str(fake.message(-1)["blocks"]), timeout=10,
             what="the request shown again with the command it now has")
    assert "handoff_review" in str(fake.message(-1)["blocks"])
    view = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: approved(path), what="alice's approval from Slack")
    assert approved(path)[0]["argv"] == ["echo", "cutover", "db-1", "pg-a.internal"]


def test_a_ledger_that_stops_naming_a_channel_leaves_no_message_asking(tmp_path, fake, signer, started):
    """The ledger's `notify` loses its Slack entry while `handoff slack` runs (the team moves db-1's
    approvals off Slack). The message posted for db-1 must not go on asking with a Review button
    that every click is refused on: it says the request is no longer answered in Slack, and it still
    says what became of the request (ops approves it with `handoff approve`)."""
    me = getpass.getuser()
    path = ledger(tmp_path, approvers=[*APPROVERS, {"name": "ops", "os_user": me}])
    app = started(fake, [str(path)])
    posted(fake)
    data = load(path)
    data["notify"] = []
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    wait_for(lambda: "handoff_review" not in str(fake.message(0)["blocks"]), timeout=10,
             what="the message no longer asking")
    assert "no Slack channel" in str(fake.message(0)["blocks"])
    done = handoff("approve", str(path), "db-1", "--as", "ops", "--yes")
    assert done.returncode == 0, done.stderr
    caught_up(app, fake, signer)
    wait_for(lambda: "approved by ops" in str(fake.message(0)["blocks"]), timeout=10, what="the message saying so")
    assert len([p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]) == 1


def _edits(fake, ts: str) -> int:
    """chat.update calls on the message `ts`, answered or not."""
    with fake.lock:
        return len([c for c in fake.calls if c["method"] == "chat.update" and c["params"].get("ts") == ts])


def test_a_message_deleted_in_slack_is_not_edited_twice_a_second_and_a_standing_request_is_posted_again(
        tmp_path, fake, signer, started):
    """Someone deletes the request message in the channel. When the checkpoint then moves, the edit is
    answered `message_not_found`: the request still stands, so it is posted again (new hash, Review
    button), and the deleted message is never tried again. Deleted once more, then approved with
    `handoff approve`: one failed edit, said once, and nothing posted (the request is over), instead of
    an edit and a stderr line every half second for as long as the process runs."""
    me = getpass.getuser()
    path = ledger(tmp_path, approvers=[*APPROVERS, {"name": "ops", "os_user": me}])
    app = started(fake, [str(path)])
    first = posted(fake)
    with fake.lock:
        del fake.messages[(first["channel"], first["ts"])]
    path.write_text(path.read_text().replace("0/9A3F2C10", "0/9A3F2C99"))
    wait_for(lambda: len([p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]) == 2, timeout=10,
             what="the request posted again")
    again = fake.message(0)
    assert "0/9A3F2C99" in str(again["blocks"]) and "handoff_review" in str(again["blocks"])
    with fake.lock:
        del fake.messages[(again["channel"], again["ts"])]
    done = handoff("approve", str(path), "db-1", "--as", "ops", "--yes")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: "not edited again" in app.stderr(), timeout=10, what="the gone message said")
    caught_up(app, fake, signer, first)
    caught_up(app, fake, signer, first)  # two whole passes more: the deleted messages had every chance to be edited again
    assert _edits(fake, first["ts"]) == 1 and _edits(fake, again["ts"]) == 1, app.stderr()
    assert app.stderr().count("is gone from Slack") == 2 and "cannot update the message" not in app.stderr()
    assert len([p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]) == 2
