"""`handoff slack` started from a terminal that then goes away, as a job left running after
an SSH logout: with the terminal gone (every write to it fails) it goes on approving from
Slack, its lines dropped; a hang-up (SIGHUP) stops it as SIGTERM does (exit 0); under
`nohup` a hang-up leaves it running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import ROOT, cli_env, read_pty
from tests.slack.kit import ALICE, APP_ID, SECRET, approved, caught_up, ledger, posted, review, wait_for

SERVING = b"serving Slack's requests at "


def _start(fake, path: Path, stderr, **popen) -> subprocess.Popen:
    env = {"SLACK_BOT_TOKEN": fake.bot_token, "SLACK_APP_TOKEN": fake.app_token, "SLACK_SIGNING_SECRET": SECRET,
           "SLACK_APP_ID": APP_ID, "HANDOFF_SLACK_API_URL": fake.api_url, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "slack", str(path), "--http", "127.0.0.1:0"],
                            env=cli_env(**env), cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                            start_new_session=True, **popen)


def _url(fd: int) -> str:
    """Read the process's terminal until it says where it serves; that address."""
    seen = read_pty(fd, lambda seen: b"\n" in seen.partition(SERVING)[2], timeout=30)
    return seen.partition(SERVING)[2].split(b"\n", 1)[0].strip().decode()


def _ended(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_with_its_terminal_gone_it_still_approves_and_a_hang_up_stops_it(tmp_path, fake, signer):
    path = ledger(tmp_path)
    master, slave = os.openpty()
    proc = _start(fake, path, slave)
    os.close(slave)
    try:
        app = SimpleNamespace(url=_url(master))
        os.close(master)  # the terminal is gone: every line it says from now on fails (EIO)
        master = -1
        view = review(app, fake, signer, ALICE)
        body = signer.body(signer.submit(view, ALICE, "db-1"))
        status, _ = signer.post(app.url, body=body, headers=signer.headers(body, secret="not-the-signing-secret"))
        assert status == 401  # refused, and said on the dead terminal
        assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
        wait_for(lambda: approved(path), what="the approval, given in Slack after the terminal went away")
        wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited")
        assert proc.poll() is None
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(15) == 0
    finally:
        if master >= 0:
            os.close(master)
        _ended(proc)
    assert len(approved(path)) == 1


def test_under_nohup_a_hang_up_leaves_it_running(tmp_path, fake, signer):
    path = ledger(tmp_path)
    log = tmp_path / "slack.log"
    with log.open("wb") as out:
        proc = _start(fake, path, out, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        wait_for(lambda: SERVING.decode() in log.read_text(), timeout=30, what="the HTTP server")
        app = SimpleNamespace(url=log.read_text().partition(SERVING.decode())[2].split("\n", 1)[0].strip())
        posted(fake)  # the worker's first pass is over
        proc.send_signal(signal.SIGHUP)
        caught_up(app, fake, signer)  # after the hang-up, the worker goes on: two clicks in turn answered
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0, log.read_text()
    finally:
        _ended(proc)
