"""Review (slack): what Slack shows as "Command, exactly as it will run" must be the whole
command, with its argument boundaries, as the TUI shows it (tui/widgets/argv_view.py) --
else a person approves from Slack a command they never saw."""

from __future__ import annotations

import json
import re
import time

from tests.slack.kit import ALICE, approved, ledger, posted, wait_for

TAIL = "DROP DATABASE orders_archive_2019;"


def _code(blocks: list[dict]) -> str:
    """The text of the mrkdwn section holding the command's code block."""
    return next(b["text"]["text"] for b in blocks if b.get("text", {}).get("type") == "mrkdwn" and "```" in b["text"]["text"])


def test_a_long_command_is_never_cut_silently_in_the_message_or_the_review_modal(tmp_path, fake, signer, started):
    """A psql step with a long (but ordinary) SQL script whose last statement drops a database.
    The message and the Review modal cut the code block at 2,900 characters with no mark that
    anything is missing, so the `DROP DATABASE` is never shown; alice types db-1 and approves
    it. Either Slack shows the whole command, or it says the command is cut and refuses to
    approve it from Slack (approve it in the TUI / CLI)."""
    sql = " ".join(f"ALTER TABLE orders_{n:03d} SET (autovacuum_enabled = true);" for n in range(60)) + " " + TAIL
    assert len(sql) > 3000
    path = ledger(tmp_path, run=["psql", "--dbname", "{target}", "-v", "ON_ERROR_STOP=1", "-c", sql])
    app = started(fake, [str(path)])
    msg = posted(fake)
    in_message = json.dumps(msg["blocks"])
    before = len(fake.views())
    assert signer.post(app.url, signer.click(msg, msg["ts"], ALICE))[0] == 200
    wait_for(lambda: len(fake.views()) > before or fake.ephemerals(ALICE), what="the modal or a refusal")
    if len(fake.views()) > before:  # the Review modal opened: what alice reads before typing the name
        view = fake.views()[-1]
        in_modal = json.dumps(view["blocks"])
        assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
        wait_for(lambda: approved(path) or fake.ephemerals(ALICE), what="the approval or a refusal")
        time.sleep(0.5)
        if approved(path):
            assert TAIL in in_modal, (
                "alice approved from Slack a command whose end she was never shown: the modal's code block "
                f"ends {_code(view['blocks'])[-80:]!r}")
            said = in_message.lower()
            assert TAIL in in_message or any(w in said for w in ("\\u2026", "cut", "truncat", "more character")), (
                f"the request message shows a cut command as the exact one: ...{_code(msg['blocks'])[-80:]!r}")


def test_two_different_commands_never_look_the_same_in_slack(tmp_path, fake, started):
    """Argument boundaries. Ledger A runs `sh -c "echo checking db-1<newline>rm -rf /srv/pgdata/db-1"`
    (the rm RUNS); ledger B runs `sh -c "echo checking db-1" "rm -rf /srv/pgdata/db-1"` (the rm is
    only $0, never run). Slack renders both code blocks byte for byte the same (one argument a
    line, a newline inside an argument kept raw), so an approver cannot tell which one they
    approve. The TUI shell-quotes each argument for exactly this reason. Likewise `dropdb "db-1 "`
    (a trailing space: another database) looks like `dropdb db-1`."""
    pairs = {
        "newline": (["sh", "-c", "echo checking {target}\nrm -rf /srv/pgdata/{target}"],
                    ["sh", "-c", "echo checking {target}", "rm -rf /srv/pgdata/{target}"]),
        "space": (["dropdb", "{target} "], ["dropdb", "{target}"]),
    }
    paths = []
    for kind, (a, b) in pairs.items():
        for side, run in (("a", a), ("b", b)):
            d = tmp_path / f"{kind}-{side}"
            d.mkdir()
            paths.append(ledger(d, run=run, task=f"{kind}-{side}"))
    started(fake, [str(p) for p in paths])
    wait_for(lambda: len([p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]) >= len(paths),
             what="every request message")
    shown: dict[str, str] = {}
    for msg in [p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]:
        task = next(b["text"]["text"] for b in msg["blocks"]
                    if b.get("type") == "section" and "text" in b and b["text"]["text"].startswith("Ledger: "))
        shown[task.removeprefix("Ledger: ")] = _code(msg["blocks"]).split("```")[1]
    same = []
    for kind in pairs:
        a, b = shown[f"{kind}-a"], shown[f"{kind}-b"]
        # What a person sees: blanks at the end of a line do not show in Slack's code block.
        seen_a, seen_b = (re.sub(r"[ \t]+$", "", t, flags=re.M) for t in (a, b))
        if seen_a == seen_b:
            same.append(f"{kind}: {a!r} and {b!r}")
    assert not same, "two different argvs are shown identically in Slack's code block: " + "; ".join(same)
