"""Review (slack): `--secrets FILE` must be a file only the Slack process's user controls.
Mode 0600 alone is checked; a file owned by another user (the agent's) passes, and whoever
owns it chooses the signing secret that proves "Slack says alice"."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time

from tests.conftest import ROOT, cli_env
from tests.fakes.slack_signer import Signer
from tests.slack.kit import ALICE, APP_ID, approved, ledger, posted, review, wait_for

AGENT_SECRET = "the-agent-chose-this-signing-secret"


def test_a_secrets_file_owned_by_another_user_is_refused(tmp_path, fake):
    """The agent runs as `nobody`; the secrets file `handoff slack` (here as root, e.g. a unit
    with no User=) reads is nobody's, mode 0600, so nobody can rewrite it. nobody puts a signing
    secret of its own in it; `handoff slack --http` starts with it, and a request the agent
    signs with that secret records "alice approved from Slack". It should refuse to start
    (exit 2, naming the file, its owner and `chown`), as it refuses a file others may read."""
    if os.geteuid() != 0:
        raise AssertionError("this test needs root (to give the file to another user)")
    agent = pwd.getpwnam("nobody")
    path = ledger(tmp_path)
    before = path.read_text()
    secrets = tmp_path / "slack.env"
    secrets.write_text(f"SLACK_BOT_TOKEN={fake.bot_token}\nSLACK_SIGNING_SECRET={AGENT_SECRET}\nSLACK_APP_ID={APP_ID}\n")
    secrets.chmod(0o600)
    os.chown(secrets, agent.pw_uid, agent.pw_gid)  # the agent's file: it can write it at will
    env = {"HANDOFF_SLACK_API_URL": fake.api_url, "PYTHONUNBUFFERED": "1", "SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": "",
           "SLACK_SIGNING_SECRET": "", "SLACK_APP_ID": ""}
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "slack", str(path), "--http", "127.0.0.1:0",
                             "--secrets", str(secrets)], env=cli_env(**env), cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if line:
                lines.append(line)
            if "serving Slack's requests at " in line or (not line and proc.poll() is not None):
                break
        if proc.poll() is None:  # it started on the agent's secret: show what that lets the agent do
            url = next(x for x in lines if "serving Slack's requests at " in x).split(" at ", 1)[1].strip()

            class App:
                pass

            app = App()
            app.url = url
            forger = Signer(AGENT_SECRET)
            posted(fake)
            view = review(app, fake, forger, ALICE)
            assert forger.post(url, forger.submit(view, ALICE, "db-1"))[0] == 200
            wait_for(lambda: approved(path), what="the forged approval", timeout=10)
            raise AssertionError(
                f"handoff slack started with a secrets file owned by {agent.pw_name} (uid {agent.pw_uid}), and a request "
                f"signed with the secret that user wrote was recorded as alice's approval: {approved(path)[0]['msg']}")
        said = "".join(lines)
        assert proc.returncode == 2, said
        assert f"--secrets {secrets}: it is owned by nobody, not by root" in said, said
        assert f"chown root {secrets} && chmod 600 {secrets}" in said, said
        assert path.read_text() == before and not os.path.exists(f"{path}.slack.jsonl")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(10)
