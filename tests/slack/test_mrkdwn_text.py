"""The request message's top-level `text` (the notification fallback) is mrkdwn for Slack:
ledger text in it must not make a mention or a link, as the blocks already promise."""

from __future__ import annotations

from tests.slack.kit import ledger, posted


def test_the_fallback_text_cannot_mention_the_channel_or_link(tmp_path, fake, started):
    """A task named `<!channel> <http://evil.example|click to approve>`: the posted `text` has it escaped."""
    path = ledger(tmp_path, task="<!channel> <http://evil.example|click to approve> &")
    started(fake, [str(path)])
    msg = posted(fake)
    fallback = msg["text"]
    assert "<!channel>" not in fallback, fallback
    assert "<http://evil.example|" not in fallback, fallback
    assert "&lt;!channel&gt;" in fallback and "&amp;" in fallback, fallback
    # the blocks (plain_text) were already safe: only the fallback misbehaves
    assert all(b["text"]["type"] == "plain_text" for b in msg["blocks"] if b.get("text") and "Ledger:" in str(b["text"]))


def test_a_reminder_cannot_mention_the_channel(tmp_path, fake, started):
    """A target named `db-1 <!channel>`, reminded after 1h: the threaded reminder (mrkdwn, no blocks) escapes it."""
    import yaml

    from tests.slack.kit import iso, load, wait_for

    path = ledger(tmp_path, since=iso(2 * 3600 + 600), policy={"remind_after": "1h"})
    data = load(path)
    data["targets"] = {"db-1 <!channel> <@U0BOB>": data["targets"]["db-1"]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    started(fake, [str(path)])
    posted(fake)
    replies = wait_for(lambda: [p for p in fake.of("chat.postMessage") if p.get("thread_ts")], what="the reminder")
    text = replies[0]["text"]
    assert text.startswith("reminder 2: db-1 "), text
    assert "<!channel>" not in text and "<@U0BOB>" not in text, text


def test_formatting_marks_in_ledger_text_format_nothing(tmp_path, fake, signer, started):
    """A target named with `~`, `*` and backticks: the request message is posted with `mrkdwn: false`
    (its fallback `text` shows the name as typed), and what the approver is told privately is a
    plain_text block, as typed."""
    import yaml

    from tests.slack.kit import ALICE, load, review, wait_for

    name = "db-1 ~db-2~ *approve* `db-4`"
    path = ledger(tmp_path)
    data = load(path)
    data["targets"] = {name: data["targets"]["db-1"]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert fake.of("chat.postMessage")[0]["mrkdwn"] is False and name in msg["text"]
    assert signer.post(app.url, signer.submit(review(app, fake, signer, ALICE), ALICE, name))[0] == 200
    told = wait_for(lambda: fake.of("chat.postEphemeral"), what="alice told")[0]
    assert [b["text"]["type"] for b in told["blocks"]] == ["plain_text"]
    assert told["blocks"][0]["text"]["text"].startswith(f"{name}: cutover approved by alice")
