"""The app's secrets come from the environment or a 0600 file, are refused from a file
others can read, and appear nowhere: not in the journal, the ledger, its sidecars,
what Slack was sent, nor on stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, cli_env
from tests.slack.kit import ALICE, APP_ID, SECRET, approved, ledger, review, wait_for


def _slack(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", "slack", *args], env=cli_env(**env),
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))


def test_a_group_readable_secrets_file_is_refused_and_nothing_is_touched(tmp_path, fake):
    """chmod 640 on the secrets file: exit 2 naming the file and `chmod 600`; the ledger unchanged, no sidecar."""
    path = ledger(tmp_path)
    before = path.read_text()
    secrets = tmp_path / "slack.env"
    secrets.write_text(f"SLACK_BOT_TOKEN={fake.bot_token}\nSLACK_APP_TOKEN={fake.app_token}\nSLACK_APP_ID={APP_ID}\n")
    secrets.chmod(0o640)
    env = {"HANDOFF_SLACK_API_URL": fake.api_url}
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_ID"):
        env[name] = ""
    out = _slack(str(path), "--secrets", str(secrets), env=env)
    assert out.returncode == 2
    assert f"--secrets {secrets}: it may be read by others" in out.stderr and f"chmod 600 {secrets}" in out.stderr
    assert fake.bot_token not in out.stderr + out.stdout
    assert path.read_text() == before and not Path(str(path) + ".slack.jsonl").exists()


def test_a_bad_line_in_the_secrets_file_names_the_line_not_its_text(tmp_path, fake):
    """A line that is not NAME=value: its number is named, its text (maybe a token) is not shown."""
    path = ledger(tmp_path)
    secrets = tmp_path / "slack.env"
    secrets.write_text(f"SLACK_BOT_TOKEN={fake.bot_token}\n{fake.app_token}\n")
    secrets.chmod(0o600)
    out = _slack(str(path), "--secrets", str(secrets), env={"SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": ""})
    assert out.returncode == 2 and f"{secrets}:2: expected NAME=value" in out.stderr
    assert fake.app_token not in out.stderr


def test_a_missing_secret_says_which_and_where(tmp_path):
    """No signing secret in HTTP mode: exit 2, naming SLACK_SIGNING_SECRET and where it may come from."""
    path = ledger(tmp_path)
    out = _slack(str(path), "--http", "127.0.0.1:0", env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_ID": "A1",
                                                          "SLACK_SIGNING_SECRET": ""})
    assert out.returncode == 2 and "HTTP mode needs SLACK_SIGNING_SECRET" in out.stderr and "never in the ledger" in out.stderr


def test_secrets_from_a_0600_file_work_and_appear_nowhere(tmp_path, fake, signer, started):
    """Tokens from a 0600 file; after a whole approval (and Slack failing for a while), no token
    and no signing secret is in the journal, the ledger, its Slack state, Slack's messages or stderr."""
    path = ledger(tmp_path)
    secrets = tmp_path / "slack.env"
    secrets.write_text(f"SLACK_BOT_TOKEN={fake.bot_token}\nSLACK_SIGNING_SECRET={SECRET}\nSLACK_APP_ID={APP_ID}\n")
    secrets.chmod(0o600)
    blank = {n: "" for n in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_ID")}
    app = started(fake, [str(path)], env=blank, extra=("--secrets", str(secrets)))
    view = review(app, fake, signer, ALICE)
    fake.fail_next = 2  # the next edit of the message meets an unreachable Slack first
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_for(lambda: approved(path), what="the approval")
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited after retries")
    assert "Slack unreachable (HTTP 503); trying again in" in app.stderr()
    app.stop()
    texts = {"stderr": app.stderr(), "slack": fake.everything()}
    for p in tmp_path.iterdir():
        if p.is_file() and p.name != "slack.env":
            texts[p.name] = p.read_text(errors="replace")
    assert {"ledger.yaml", "ledger.yaml.journal.jsonl", "ledger.yaml.slack.jsonl"} <= set(texts)
    for where, text in texts.items():
        for secret in (fake.bot_token, SECRET):
            assert secret not in text, f"a secret in {where}"  # Slack's copy: the bot token only ever in the header
    assert "legacy-verification-token" not in texts["ledger.yaml.slack.jsonl"]


def test_a_bot_token_slack_refuses_ends_the_process_with_what_to_check(tmp_path, fake):
    """auth.test says invalid_auth: exit 2 naming SLACK_BOT_TOKEN, the token itself never printed."""
    path = ledger(tmp_path)
    out = _slack(str(path), "--http", "127.0.0.1:0", env={"SLACK_BOT_TOKEN": "xoxb-wrong-token-1234",
                                                          "SLACK_SIGNING_SECRET": SECRET, "SLACK_APP_ID": APP_ID,
                                                          "HANDOFF_SLACK_API_URL": fake.api_url})
    assert out.returncode == 2 and "Slack refused the bot token" in out.stderr and "SLACK_BOT_TOKEN" in out.stderr
    assert "xoxb-wrong-token-1234" not in out.stderr + out.stdout


def _blank_env(fake) -> dict[str, str]:
    return {"HANDOFF_SLACK_API_URL": fake.api_url, **{n: "" for n in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
                                                                   "SLACK_SIGNING_SECRET", "SLACK_APP_ID")}}


def test_a_secrets_file_in_a_folder_others_may_write_is_refused_and_nothing_is_touched(tmp_path, fake):
    """A 0600 file in a folder made 0777 (not sticky): another user could replace it with their own
    signing secret. Exit 2 naming the folder and `chmod go-w`; the ledger unchanged, no sidecar."""
    path = ledger(tmp_path)
    before = path.read_text()
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    secrets = folder / "slack.env"
    secrets.write_text(f"SLACK_BOT_TOKEN={fake.bot_token}\nSLACK_APP_TOKEN={fake.app_token}\nSLACK_APP_ID={APP_ID}\n")
    secrets.chmod(0o600)
    out = _slack(str(path), "--secrets", str(secrets), env=_blank_env(fake))
    assert out.returncode == 2, out.stderr
    assert f"--secrets {secrets}: the folder {folder} " in out.stderr and f"chmod go-w {folder}" in out.stderr
    assert path.read_text() == before and not Path(str(path) + ".slack.jsonl").exists()
