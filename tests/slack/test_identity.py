"""A Slack identity is one more verified form of approver: mapped by ids only, checked
again under the fence, and a malformed one is refused with where and what to write."""

from __future__ import annotations

from engine.approvals.approvers import recheck
from engine.ledger.model import Approval, Ledger
from tests.conftest import handoff
from tests.slack.kit import ALICE, ledger


def _ledger(tmp_path) -> Ledger:
    import yaml

    return Ledger(**yaml.safe_load(ledger(tmp_path).read_text()))


def _approval(**slack) -> Approval:
    return Approval(by="alice", user="root", at="2026-12-01T12:00:00Z", step="cutover", hash="h", via="slack",
                    verified="slack", slack=slack)


def test_under_the_fence_a_slack_approval_stands_only_for_the_mapped_ids(tmp_path):
    """alice's approval from Slack stands with her ids; with another member's ids, or not
    verified by Slack, it never authorises a run."""
    ledger_ = _ledger(tmp_path)
    assert recheck(ledger_, "db-1", _approval(user=ALICE, team="T0123")) is None
    why = recheck(ledger_, "db-1", _approval(user="U0MALLORY", team="T0123"))
    assert why and "T0123/U0MALLORY" in why
    unverified = _approval(user=ALICE, team="T0123")
    unverified.verified = "none"
    assert recheck(ledger_, "db-1", unverified)
    local = Approval(by="alice", user="root", at="2026-12-01T12:00:00Z", step="cutover", hash="h")
    assert "approves from Slack only" in recheck(ledger_, "db-1", local)


def test_a_malformed_slack_id_is_refused_with_file_line_and_what_to_write(tmp_path):
    """`slack: alice` (a name, not ids): `handoff check` exits 2 naming the file and line, the ledger unchanged."""
    path = ledger(tmp_path, approvers=[{"name": "alice", "slack": "alice"}])
    before = path.read_text()
    out = handoff("check", str(path))
    assert out.returncode == 2, out.stdout + out.stderr
    said = out.stdout + out.stderr
    assert f"{path}:" in said and "is not TEAM/USER in Slack's ids" in said and "Copy member ID" in said
    assert path.read_text() == before


def test_a_slack_notify_entry_needs_a_channel_id(tmp_path):
    """`notify: [{slack: {channel: "#ops"}}]`: a channel name is refused (Slack needs the id)."""
    path = ledger(tmp_path, notify=[{"slack": {"channel": "#ops"}}])
    before = path.read_text()
    out = handoff("check", str(path))
    assert out.returncode == 2 and f"{path}:" in out.stdout + out.stderr
    assert "'#ops' is not a Slack channel id: write the id" in out.stdout + out.stderr
    assert path.read_text() == before


def test_a_slack_notify_entry_is_not_a_failed_page_for_the_session():
    """The session pages webhooks and commands; a `slack:` entry is handoff slack's, never "pages nobody"."""
    import sys

    from engine.ledger.model import Notifier
    from engine.notify import send_pages

    entry = Notifier(slack={"channel": "C0OPS"})
    assert send_pages([entry], "hello", event="approval_needed", ledger_dir=".", python=sys.executable,
                      run_command=lambda *a, **k: None) == []


def test_handoff_slack_will_not_start_as_another_user_than_the_ledger_names(tmp_path, fake):
    """The ledger says the Slack process runs as nobody; started as root it exits 2 saying so, posts nothing,
    and the ledger is unchanged."""
    import subprocess
    import sys

    from tests.conftest import ROOT, cli_env
    from tests.slack.kit import APP_ID, SECRET

    path = ledger(tmp_path, notify=[{"slack": {"channel": "C0OPS", "os_user": "nobody"}}])
    before = path.read_bytes()
    out = subprocess.run([sys.executable, "-m", "engine.cli.main", "slack", str(path), "--http", "127.0.0.1:0"],
                         env=cli_env(SLACK_BOT_TOKEN=fake.bot_token, SLACK_SIGNING_SECRET=SECRET, SLACK_APP_ID=APP_ID,
                                     HANDOFF_SLACK_API_URL=fake.api_url),
                         capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert out.returncode == 2, out.stdout + out.stderr
    assert (f"{path}: approvals from Slack are recorded by OS user nobody only (`handoff slack` runs as it): the "
            "approving process runs as uid 0 (root), not nobody's uid 65534; nothing was started") in out.stderr, out.stderr
    assert not fake.of("chat.postMessage") and path.read_bytes() == before
