"""`handoff slack LEDGER...`: wiring. The Hub owns the watched ledgers, the Web API
client and one worker thread; the transport (Socket Mode or HTTP) hands every request
to `Hub.receive`, which checks it is for our app and workspace, records a submission's
delivery key durably, and returns the ack at once (within Slack's 3 s); the worker then
decides (engine.slack.decide) and keeps the messages true (engine.slack.watch).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from engine.approvals.approvers import slack_recorder_problem
from engine.errors import HandoffError, UsageError
from engine.host import console, failpoints
from engine.slack import blocks
from engine.slack.decide import Decider
from engine.slack.ledgers import Watched
from engine.slack.refusals import Refusals
from engine.slack.secrets import Secrets
from engine.slack.verify import identity_problem
from engine.slack.watch import sync
from engine.slack.web import SlackFailed, Web

POLL = 0.5  # seconds between looks at the ledgers when nothing arrives


def delivery_key(payload: dict[str, Any]) -> str:
    """What makes a submission this one and no other: the modal it came from (a retry or a
    replay of the same body carries the same view id), per workspace and user."""
    view = payload.get("view") or {}
    user = payload.get("user") or {}
    raw = f"{payload.get('type')}|{user.get('team_id')}|{user.get('id')}|{view.get('id')}|{view.get('callback_id')}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


class Hub:
    """Everything one `handoff slack` process holds."""

    def __init__(self, secrets: Secrets, locations: list[str], *, err=sys.stderr, now: Callable[[], float] = time.time):
        self.secrets, self.err, self.now = secrets, err, now
        self.web = Web(secrets, err=err)
        try:
            auth = self.web.call("auth.test")
        except SlackFailed as error:
            raise UsageError(f"Slack refused the bot token ({error}): check SLACK_BOT_TOKEN") from None
        self.team_id, self.enterprise_id = auth.get("team_id") or "", auth.get("enterprise_id") or None
        self.ledgers = {w.key: w for w in (Watched.open(loc) for loc in locations)}
        for w in self.ledgers.values():
            why = slack_recorder_problem(w.handle.load())
            if why:
                raise UsageError(f"{w.handle.display_location}: {why}; nothing was started") from None
            if w.channel(w.handle.load()) is None:
                self.say(f"{w.handle.display_location} has no `notify: [{{slack: {{channel: C0123ABC}}}}]` entry: "
                         "no request of it is posted until one is added")
        self.queue: queue.Queue = queue.Queue()
        self.stopping = threading.Event()
        self.refusals = Refusals()
        self.decider = Decider(self.ledgers, self.web, self._sync, now, self.say)
        # What only this app holds (HTTP mode's signing secret, Socket Mode's app token): a delivery is
        # recorded with a MAC under it, so a line written into the Slack record by whoever can write beside
        # the ledger is never taken for one Slack sent.
        secret = (secrets.signing_secret or secrets.app_token or secrets.bot_token).encode("utf-8")
        self._seal_key = hmac.new(secret, b"handoff slack: a delivery this process received", hashlib.sha256).digest()
        for w in self.ledgers.values():
            for key, payload, seal in w.state.unfinished():  # received before a restart, never acted on
                why = self._unsealed(key, payload, seal)
                if why:
                    self.unauthentic(payload, why)
                    w.state.finish(key, f"refused: {why}")
                    continue
                self.queue.put(("submission", key, payload))

    def seal(self, key: str, payload: dict[str, Any]) -> str:
        """The MAC a delivery is recorded with: its key and its payload, as stored."""
        body = json.dumps({"delivery": key, "payload": payload}, sort_keys=True, ensure_ascii=True).encode("ascii")
        return hmac.new(self._seal_key, body, hashlib.sha256).hexdigest()

    def _unsealed(self, key: str, payload: Any, seal: Any) -> str | None:
        """Why a delivery found unfinished at start is not acted on (None: it is one this app
        received and recorded, and it still passes what `receive` checked)."""
        if not isinstance(payload, dict) or not isinstance(seal, str) or not hmac.compare_digest(seal, self.seal(key, payload)):
            return (f"delivery {key[:12]} in the Slack record carries no seal of this app (written by hand, or by "
                    "another app's secrets): not acted on")
        why = identity_problem(payload, app_id=self.secrets.app_id, team_id=self.team_id, enterprise_id=self.enterprise_id)
        if why:
            return why
        return None if (payload.get("view") or {}).get("callback_id") in (blocks.APPROVE_VIEW, blocks.REJECT_VIEW) \
            else f"delivery {key[:12]} is not a Review or Reject submission: not acted on"

    def say(self, text: str) -> None:
        console.say(f"handoff slack: {self.secrets.mask(text)}", self.err)  # dropped if its terminal has gone

    def _sync(self, w: Watched) -> None:
        sync(w, self.web, now=self.now(), err=self.err)

    def _ledger_of(self, payload: dict[str, Any]) -> Watched | None:
        try:
            if payload.get("type") == "view_submission":
                ref = json.loads((payload.get("view") or {}).get("private_metadata") or "{}")
            else:
                ref = json.loads(((payload.get("actions") or [{}])[0]).get("value") or "{}")
        except ValueError:
            return None
        return self.ledgers.get(str(ref.get("l"))) if isinstance(ref, dict) else None

    def unauthentic(self, payload: dict[str, Any] | None, why: str) -> None:
        """A request that is not Slack's (HTTP: bad signature or old timestamp): nothing is done;
        stderr says so, and so does the journal of the ledger it names, if it names one. At most
        once a minute each: the rest are counted and written down together (engine.slack.refusals)."""
        w = self._ledger_of(payload) if isinstance(payload, dict) else None
        if not self.refusals.admit(w.key if w is not None else ""):
            return
        self.say(f"refused a request: {why}")
        if w is not None:
            w.handle.journal.append("slack_refused", f"a request claiming to be Slack's was refused: {why}",
                                    actor="handoff-slack", why=why)

    def counted_refusals(self, *, all_of_them: bool = False) -> None:
        """Write down the refusals only counted in a minute that is over (all of them: the process ends)."""
        for key, n in self.refusals.due(all_of_them=all_of_them):
            text = (f"{n} more request(s) claiming to be Slack's were refused in the last minute "
                    "(written down together: one record a minute at most)")
            self.say(f"refused {n} more request(s) in the last minute")
            w = self.ledgers.get(key)
            if w is not None:
                w.handle.journal.append("slack_refused", text, actor="handoff-slack", count=n)

    def received(self, payload: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """(taken, the ack body) for an authentic request. Not taken when its delivery could
        not be stored (the Slack record's lock held past its bound, a full disk): that is said,
        and the transport acknowledges nothing, so Slack sends the request again."""
        try:
            return True, self.receive(payload)
        except HandoffError as error:
            self.say(f"a request was not taken; Slack sends it again: {error}")
            return False, None

    def receive(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """An authentic request's payload: returns the ack body (None: an empty ack)."""
        why = identity_problem(payload, app_id=self.secrets.app_id, team_id=self.team_id, enterprise_id=self.enterprise_id)
        if why:
            self.unauthentic(payload, why)
            return None
        kind = payload.get("type")
        if kind == "block_actions":
            self.queue.put(("action", None, payload))
            return None
        if kind != "view_submission":
            return None
        view = payload.get("view") or {}
        if view.get("callback_id") == blocks.APPROVE_VIEW:
            meta = json.loads(view.get("private_metadata") or "{}")
            if blocks.typed(payload, blocks.CONFIRM_BLOCK, blocks.CONFIRM_INPUT).strip() != meta.get("t"):
                return {"response_action": "errors",
                        "errors": {blocks.CONFIRM_BLOCK: f"type {meta.get('t')} exactly to approve it"[:150]}}
        w = self._ledger_of(payload)
        if w is None:
            self.say("a submission for a ledger this process does not watch: ignored")
            return None
        key = delivery_key(payload)
        if not w.state.claim(key, payload, self.seal):  # durable before the ack: a retry or replay is never acted on twice
            self.say(f"delivery {key[:12]} was received before: not acted on again")
            return None
        failpoints.reached("slack-after-claim")  # tests: stopped (then killed) with the key on disk, nothing acked
        self.queue.put(("submission", key, payload))
        return None

    def stop(self) -> None:
        """Asked to stop (by a signal handler, between two bytecodes of the worker's own thread): the
        wish is noted and the worker woken now, not at its next POLL, by a thread of its own (the
        handler must not take the queue's lock, which the interrupted worker may hold)."""
        self.stopping.set()
        threading.Thread(target=self.queue.put, args=(None,), name="slack-stop", daemon=True).start()

    def work(self) -> None:
        """The worker: a look at every ledger at once (a request waiting is posted now), then each
        decision and a look after it, or a look every POLL seconds; until stopped."""
        wait = 0.0  # the first turn waits for nothing
        while not self.stopping.is_set():
            try:
                item = self.queue.get(timeout=wait)
            except queue.Empty:
                item = None
            self._turn(item)
            wait = POLL

    def _turn(self, item: tuple[str, Any, dict[str, Any]] | None) -> None:
        """One decision (if any), then a look at every ledger."""
        kind, key, payload = item or ("", "", {})
        try:
            if kind == "action":
                self.decider.action(payload)
            elif kind == "submission":
                w = self._ledger_of(payload)
                out = self.decider.submission(key, payload)
                if w is not None:
                    w.state.finish(key, out)
            for w in self.ledgers.values():
                self._sync(w)
            self.counted_refusals()
        except SlackFailed as error:
            self.say(str(error))
        except Exception as error:  # noqa: BLE001 - a long-running process says what went wrong and goes on
            self.say(f"{type(error).__name__}: {error}")


def run(locations: list[str], secrets: Secrets, *, http: str | None) -> int:
    """Serve until SIGTERM, Ctrl-C or a hang-up (unless ignored: nohup; engine.host.console)."""
    hub = Hub(secrets, locations)
    console.catch_stop_signals(lambda _sig: hub.stop())  # for the life of the process
    if http:
        from engine.slack.http_mode import serve

        stop = serve(hub, http)
    else:
        from engine.slack.socket_mode import connect

        stop = connect(hub)
    names = ", ".join(w.handle.display_location for w in hub.ledgers.values())
    hub.say(f"watching {names} for workspace {hub.team_id}")
    try:
        hub.work()
    finally:
        stop()
        hub.counted_refusals(all_of_them=True)
    return 0
