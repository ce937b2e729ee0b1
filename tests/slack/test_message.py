"""What the request message shows: ledger text as data (no mention, link or code-block
escape), secrets redacted as everywhere; and Reject from Slack blocks the target."""

from __future__ import annotations

from engine.slack.blocks import code
from tests.slack.kit import BOB, journal, ledger, load, posted, wait_for


def test_an_argv_cannot_mention_link_or_close_the_code_block():
    """`<!channel>`, `<http://x|y>`, ``` and `&` in an argument arrive escaped, one argument a line."""
    text = code(["echo", "<!channel>", "<http://evil|click>", "```", "a&b"])
    assert text.startswith("```") and text.endswith("```") and text.count("```") == 2
    assert "<" not in text and ">" not in text and "&lt;!channel&gt;" in text and "a&amp;b" in text
    assert text.splitlines()[1] == "&lt;!channel&gt;"


def test_a_secret_in_the_argv_is_redacted_in_slack_and_in_the_slack_state(tmp_path, fake, started):
    """The ledger's `redact:` pattern masks the argument in the message and in `<ledger>.slack.jsonl`."""
    path = ledger(tmp_path, redact=["s3cr3t-[0-9]+"], run=["echo", "cutover", "{target}", "token=s3cr3t-42"])
    started(fake, [str(path)])
    msg = posted(fake)
    assert "token=" in str(msg["blocks"]) and "s3cr3t-42" not in fake.everything()
    state = tmp_path / "ledger.yaml.slack.jsonl"  # the message's record is written once Slack answered the post
    wait_for(lambda: state.exists() and msg["ts"] in state.read_text(), what="the posted message in the Slack state")
    text = state.read_text()
    assert "token=[REDACTED]" in text and "s3cr3t-42" not in text


def test_reject_from_slack_blocks_the_target_with_the_reason(tmp_path, fake, signer, started):
    """bob presses Reject and says why: db-1 is blocked `rejected by bob: ...`, journaled via slack, the message says so."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    msg = posted(fake)
    assert signer.post(app.url, signer.click(msg, msg["ts"], BOB, action="handoff_reject"))[0] == 200
    view = wait_for(lambda: fake.views(), what="the reject modal")[-1]
    assert view["callback_id"] == "handoff_reject_view"
    assert signer.post(app.url, signer.submit(view, BOB, "lag is 40s, not now"))[0] == 200
    wait_for(lambda: load(path)["targets"]["db-1"]["state"] == "blocked", what="the target blocked")
    assert load(path)["targets"]["db-1"]["reason"] == "rejected by bob: lag is 40s, not now"
    (record,) = wait_for(lambda: [r for r in journal(path) if r["kind"] == "rejection"],  # journaled after the write
                         what="the rejection record")
    assert record["actor"] == "bob" and record["via"] == "slack" and record["slack"]["user"] == BOB
    wait_for(lambda: "not approved: db-1 is blocked: rejected by bob" in str(fake.message(0)["blocks"]),
             what="the message edited")
