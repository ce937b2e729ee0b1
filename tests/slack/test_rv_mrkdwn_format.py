"""Review (slack): ledger text in a message Slack reads as mrkdwn (the threaded reminder: `text`
only, no blocks) must stay text. `&`, `<`, `>` are escaped (no mention, no link), but Slack's
formatting marks are not: `*bold*`, `~strike~`, `_italic_` and backticks in a target's name
become formatting in the channel."""

from __future__ import annotations

import yaml

from tests.slack.kit import iso, ledger, load, posted, wait_for

NAME = "db-1 ~db-2~ *db-3 is safe: approve it* `db-4`"


def test_a_reminder_shows_a_target_name_as_typed_not_as_formatting(tmp_path, fake, started):
    """A target whose name carries mrkdwn marks is reminded about after 1h. The reminder is
    posted as mrkdwn with the marks raw, so Slack strikes through `db-2`, bolds
    `db-3 is safe: approve it` and shows `db-4` as code: the thread says something the
    ledger does not. It should be posted so Slack reads no markup in it (`mrkdwn: false`, or a
    plain_text block), as the request message's blocks are."""
    path = ledger(tmp_path, since=iso(2 * 3600 + 600), policy={"remind_after": "1h"})
    data = load(path)
    data["targets"] = {NAME: data["targets"]["db-1"]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    started(fake, [str(path)])
    posted(fake)
    reply = wait_for(lambda: [p for p in fake.of("chat.postMessage") if p.get("thread_ts")], what="the reminder")[0]
    plain_blocks = reply.get("blocks") and all(
        b.get("text", {}).get("type") == "plain_text" for b in reply["blocks"] if "text" in b)
    read_as_mrkdwn = reply.get("mrkdwn") is not False and not plain_blocks
    marks = [m for m in ("~db-2~", "*db-3 is safe: approve it*", "`db-4`") if m in reply["text"]]
    assert not (read_as_mrkdwn and marks), (
        f"the reminder is read by Slack as mrkdwn with the formatting marks of the target's name raw: {marks}; "
        f"text={reply['text']!r}")
