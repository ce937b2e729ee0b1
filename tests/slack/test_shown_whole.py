"""What a person approves from Slack is exactly what they were shown: every argument on a line
of its own, unambiguous, the whole command over as many sections as it needs; a command Slack
cannot show whole is said to be so and cannot be approved from Slack at all."""

from __future__ import annotations

import json

from engine.codec.textsafe import shell_word
from engine.slack import blocks
from tests.slack.kit import ALICE, approved, ledger, posted, refused, wait_for


def _code(argv: list[str]) -> str:
    return "\n".join(b["text"]["text"] for b in blocks.command(argv))


def test_each_argument_is_shown_so_no_two_argvs_read_alike():
    """A blank, a quote, an empty argument, a newline or a tab inside one: one shell word each, one line each."""
    assert [shell_word(a) for a in ("dropdb", "db-1 ", "", "it's", "a\nb", "a\tb", "<!channel>", "a\\nb")] == \
        ["dropdb", "'db-1 '", "''", "'it'\"'\"'s'", "$'a\\nb'", "$'a\\tb'", "'<!channel>'", "'a\\nb'"]
    assert _code(["sh", "-c", "echo 1\nrm x"]) != _code(["sh", "-c", "echo 1", "rm x"])
    assert _code(["dropdb", "db-1 "]) != _code(["dropdb", "db-1"])
    assert _code(["a", ""]) != _code(["a"])


def test_a_long_command_is_shown_whole_over_several_sections_each_within_slack_s_limit():
    """An argument of 10,000 `<` (50,000 characters once escaped): every character shown, no section past 3,000."""
    argv = ["psql", "-c", "<" * 10_000, "--end"]
    sections = blocks.command(argv)
    texts = [s["text"]["text"] for s in sections]
    assert len(sections) > 1 and all(len(t) <= 3000 for t in texts)
    assert "".join(t.split("```")[1] for t in texts).count("&lt;") == 10_000 and texts[-1].endswith("--end```")
    assert all(t.startswith("(the same argument, continued)") for t in texts[2:])


def test_a_command_too_long_to_show_is_said_so_and_cannot_be_approved_from_slack(tmp_path, fake, signer, started):
    """A 200,000-character argument: the message says it cannot be shown whole and has no Review button;
    a Review click and an approval submitted anyway are refused, pointing to `handoff approve`; the ledger unchanged."""
    path = ledger(tmp_path, run=["sh", "-c", "x" * 200_000])
    before = path.read_text()
    app = started(fake, [str(path)])
    msg = posted(fake)
    said = json.dumps(msg["blocks"])
    assert "too long for Slack to show whole" in said and "```" not in said
    buttons = [e for b in msg["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [e["action_id"] for e in buttons] == [blocks.REJECT]
    forged = dict(msg, blocks=[{"type": "actions", "elements": [dict(buttons[0], action_id=blocks.REVIEW)]}])
    assert signer.post(app.url, signer.click(forged, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal of the click")
    ref = json.loads(buttons[0]["value"])
    revision = int(said.split("Ledger revision: ")[1].split('"')[0])
    view = {"id": "V0FORGED", "callback_id": blocks.APPROVE_VIEW, "blocks": [
        {"type": "input", "block_id": blocks.CONFIRM_BLOCK, "element": {"action_id": blocks.CONFIRM_INPUT}}],
        "private_metadata": json.dumps({"l": ref["l"], "t": "db-1", "s": "cutover", "h": ref["h"], "rev": revision,
                                        "c": msg["channel"], "ts": msg["ts"]})}
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: len(fake.ephemerals(ALICE)) >= 2, what="the refusal of the submission")
    for told in fake.ephemerals(ALICE):
        assert "too long for Slack to show whole, so it cannot be approved from Slack" in told, told
        assert f"handoff approve {path} db-1" in told, told
    assert len(refused(path)) == 2 and not approved(path) and not fake.views()
    assert path.read_text() == before
