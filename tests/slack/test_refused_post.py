"""Review (slack): a request message Slack refuses to post (the bot was never invited to the
channel: `not_in_channel`; the channel is gone or archived) is tried again, since a person can fix
that, but not every poll for ever: each message waits longer after each refusal, the refusal is
said once with what to do, other ledgers' messages go out as usual, and once the bot is invited
(or the ledger names another channel) the request is posted and that is said too."""

from __future__ import annotations

import yaml

from tests.slack.kit import caught_up, ledger, load, posted, wait_for

FIRST_TS = "1700000001.000100"  # where the probe clicks while no request message could be posted


def _tried(fake, channel: str) -> int:
    with fake.lock:
        return len([c for c in fake.calls if c["method"] == "chat.postMessage" and c["params"].get("channel") == channel])


def test_a_post_slack_refuses_is_tried_less_and_less_often_and_said_once(tmp_path, fake, signer, started):
    """The bot is not in C0OPS: ten passes of the worker (each a look at every ledger) try db-1's post
    at most three times, not ten; stderr says it once, at the second try too, naming the channel and `/invite`. The other
    ledger's request, in C0B, is posted all the same. Once the bot is invited the request is posted
    in C0OPS and stderr says so."""
    fake.refuse["C0OPS"] = "not_in_channel"
    (tmp_path / "b").mkdir()
    other = ledger(tmp_path / "b", notify=[{"slack": {"channel": "C0B"}}])
    path = ledger(tmp_path)
    app = started(fake, [str(path), str(other)])
    wait_for(lambda: _tried(fake, "C0B") and _tried(fake, "C0OPS"), what="both requests tried")
    probe = {"channel": "C0B", "ts": FIRST_TS}
    for _ in range(5):
        caught_up(app, fake, signer, probe)
    assert _tried(fake, "C0OPS") <= 3, (_tried(fake, "C0OPS"), app.stderr())
    wait_for(lambda: _tried(fake, "C0OPS") >= 2, what="a second try, once its pause is over")
    caught_up(app, fake, signer, probe)
    said = [x for x in app.lines if "not_in_channel" in x]
    assert len(said) == 1, app.stderr()
    assert "cannot post the request for db-1 in C0OPS" in said[0] and "invite the app's bot to C0OPS" in said[0], said
    assert _tried(fake, "C0B") == 1 and "C0B" in {m["channel"] for m in fake.messages.values()}
    fake.refuse.clear()  # someone typed /invite in C0OPS
    wait_for(lambda: "C0OPS" in {m["channel"] for m in fake.messages.values()}, timeout=40, what="the post in C0OPS")
    wait_for(lambda: "posted the request for db-1 in C0OPS now" in app.stderr(), what="the success said")


def test_a_new_channel_in_the_ledger_is_tried_at_once(tmp_path, fake, signer, started):
    """Slack refuses C0OPS (`channel_not_found`, said with what to check); the ledger is edited to
    name C0NEW: db-1's request is posted there on the worker's next pass, without waiting out the
    pause C0OPS earned."""
    fake.refuse["C0OPS"] = "channel_not_found"
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    wait_for(lambda: "channel_not_found" in app.stderr(), what="the refusal said")
    assert "check the channel id in the ledger's `notify:`" in app.stderr()
    data = load(path)
    data["notify"] = [{"slack": {"channel": "C0NEW"}}]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    caught_up(app, fake, signer, {"channel": "C0NEW", "ts": FIRST_TS})
    assert "C0NEW" in {m["channel"] for m in fake.messages.values()}, app.stderr()


def test_an_edit_slack_refuses_is_tried_less_and_less_often_and_said_once(tmp_path, fake, signer, started):
    """The request message is posted, then the channel is archived and db-1's checkpoint moves: the
    edit is answered `is_archived`. Ten passes of the worker try it at most three times and stderr
    says it once (unarchive it, or name another channel); unarchived, the message is edited and
    stderr says so."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    first = posted(fake)
    fake.refuse["C0OPS"] = "is_archived"
    path.write_text(path.read_text().replace("0/9A3F2C10", "0/9A3F2C99"))
    wait_for(lambda: "is_archived" in app.stderr(), what="the refused edit said")
    for _ in range(5):
        caught_up(app, fake, signer, first)
    assert _edits(fake, first["ts"]) <= 3, (_edits(fake, first["ts"]), app.stderr())
    said = [x for x in app.lines if "is_archived" in x]
    assert len(said) == 1 and "cannot update the message for db-1 in C0OPS" in said[0], app.stderr()
    assert "C0OPS is archived: unarchive it, or name another channel" in said[0], said
    fake.refuse.clear()
    wait_for(lambda: "0/9A3F2C99" in str(fake.message(0)["blocks"]), timeout=40, what="the message edited")
    wait_for(lambda: "updated the message for db-1 in C0OPS again" in app.stderr(), what="the edit said")


def _edits(fake, ts: str) -> int:
    with fake.lock:
        return len([c for c in fake.calls if c["method"] == "chat.update" and c["params"].get("ts") == ts])
