"""Shared by the Slack tests: ledgers with a Slack channel and approvers, and
`handoff slack` as a real process pointed at the fake Slack (tests.fakes.slack_api).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT, cli_env
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signer import Signer

SECRET = "slack-signing-secret-5f3c9a0d7e21b8c4"
APP_ID = "A0APP"
ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"
APPROVERS = [{"name": "alice", "slack": f"T0123/{ALICE}"}, {"name": "bob", "slack": f"T0123/{BOB}"}]


def iso(seconds_ago: float = 0) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def ledger(tmp: Path, *, awaiting_by: str = "agent", since: str | None = None, policy: dict | None = None,
           approvers: list | None = None, run: list[str] | None = None, **top: Any) -> Path:
    """db-1 awaits approval of the irreversible cutover; requests go to channel C0OPS."""
    step = {"name": "cutover", "from": "verified", "to": "done", "run": run or ["echo", "cutover", "{target}", "{checkpoint}"]}
    if policy:
        step["approvals"] = policy
    data = {"task": "slack-test", "environment": "production",
            "invariants": ["never run cutover on a db whose state != verified"],
            "approvers": APPROVERS if approvers is None else approvers, "notify": [{"slack": {"channel": "C0OPS"}}],
            "runbook": {"steps": [step]},
            "targets": {"db-1": {"state": "awaiting_approval", "checkpoint": "0/9A3F2C10", "awaiting": "cutover",
                                 "awaiting_by": awaiting_by, "awaiting_since": since or iso()}}, **top}
    path = tmp / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def journal(path: Path) -> list[dict]:
    j = Path(str(path) + ".journal.jsonl")
    return [json.loads(x) for x in j.read_text().splitlines()] if j.exists() else []


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class SlackProcess:
    """`handoff slack LEDGER... --http 127.0.0.1:0` (or Socket Mode) as a real process."""

    def __init__(self, fake: FakeSlack, ledgers: list[str], *, socket_mode: bool = False,
                 env: dict[str, str] | None = None, extra: tuple[str, ...] = ()) -> None:
        args = [*ledgers, *extra] + ([] if socket_mode else ["--http", "127.0.0.1:0"])
        base = {"SLACK_BOT_TOKEN": fake.bot_token, "SLACK_APP_TOKEN": fake.app_token, "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_APP_ID": APP_ID, "HANDOFF_SLACK_API_URL": fake.api_url, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "slack", *args],
                                     env=cli_env(**{**base, **(env or {})}), cwd=str(ROOT), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = None
        if not socket_mode:
            line = wait_for(lambda: next((x for x in self.lines if "serving Slack's requests at " in x), None)
                            or (self.proc.poll() is not None and "EXIT"), what="the HTTP server")
            assert line != "EXIT", self.stderr()
            self.url = line.split("serving Slack's requests at ", 1)[1].strip()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)

    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def posted(fake: FakeSlack, n: int = 1) -> dict:
    """The first request message, once `n` have been posted."""
    wait_for(lambda: len([p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]) >= n,
             what=f"{n} request message(s)")
    return fake.message(0)


def review(app: SlackProcess, fake: FakeSlack, signer: Signer, user: str) -> dict:
    """`user` clicks Review on the first request message; the modal Slack opened."""
    before = len(fake.views())
    status, _ = signer.post(app.url, signer.click(posted(fake), posted(fake)["ts"], user))
    assert status == 200
    wait_for(lambda: len(fake.views()) > before, what="views.open")
    return fake.views()[-1]


PROBE = "U0PROBE"  # who clicks in caught_up(): no approver, told only that the ledger is not watched


def caught_up(app: SlackProcess, fake: FakeSlack, signer: Signer, msg: dict | None = None) -> None:
    """Return once the worker has finished a whole pass (decisions, a look at every ledger, the
    refusals counted) begun after everything sent before: the product's own sync point in place of
    a fixed "it had every chance" sleep. Two clicks naming a ledger this process does not watch, one
    after the other: the worker takes requests in order, one at a time, and answers such a click
    with an ephemeral only (no journal record, no modal, nothing on any watched ledger), so when the
    second is answered, the first one's pass (begun after anything queued before it) is over.
    `msg`: the message clicked on (the first request message, unless the test deleted it)."""
    msg = msg or posted(fake)
    button = {"action_id": "handoff_review", "value": json.dumps({"l": "not-watched", "t": "-"})}
    probe = {"channel": msg["channel"], "blocks": [{"type": "actions", "elements": [button]}]}
    for _ in range(2):
        click = signer.click(probe, msg["ts"], PROBE)
        before = len(fake.ephemerals(PROBE))
        status, _ = signer.post(app.url, click)
        assert status == 200, status
        wait_for(lambda n=before: len(fake.ephemerals(PROBE)) > n, timeout=30,
                 what="the worker to answer a click queued after everything before it")
    assert all("does not watch" in t for t in fake.ephemerals(PROBE)), fake.ephemerals(PROBE)


def approved(path: Path) -> list[dict]:
    return [r for r in journal(path) if r["kind"] == "approval"]


def refused(path: Path) -> list[dict]:
    return [r for r in journal(path) if r["kind"] == "slack_refused"]
