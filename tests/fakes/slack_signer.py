"""Builds the interaction payloads Slack sends (`block_actions` for a button,
`view_submission` for a modal) and signs them as Slack does: HMAC-SHA256 with the
signing secret over `v0:{timestamp}:{body}`, the body form-encoded `payload=...`.
The clock is injectable, so a test can sign a request 301 s in the past.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

_n = itertools.count(1)


class Signer:
    """One app in one workspace, as Slack would speak for it."""

    def __init__(self, secret: str, *, app_id: str = "A0APP", team: str = "T0123",
                 clock: Callable[[], float] = time.time) -> None:
        self.secret, self.app_id, self.team, self.clock = secret, app_id, team, clock

    def user(self, user_id: str, team: str | None = None) -> dict[str, Any]:
        return {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": team or self.team}

    def click(self, message: dict[str, Any], ts: str, user_id: str, action: str = "handoff_review", *,
              team: str | None = None, app_id: str | None = None) -> dict[str, Any]:
        """A `block_actions` payload: `user_id` clicked `action` on `message` (as chat.postMessage sent it)."""
        button = next(e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]
                      if e["action_id"] == action)
        n = next(_n)
        return {"type": "block_actions", "api_app_id": app_id or self.app_id, "token": "legacy-verification-token",
                "team": {"id": team or self.team, "domain": "fake"}, "user": self.user(user_id, team),
                "container": {"type": "message", "message_ts": ts, "channel_id": message["channel"]},
                "channel": {"id": message["channel"], "name": "ops"}, "message": {"ts": ts, "blocks": message["blocks"]},
                "trigger_id": f"{n}.trigger", "response_url": f"http://127.0.0.1:9/response/{n}",
                "actions": [{"type": "button", "action_id": action, "block_id": "decide", "value": button["value"],
                             "action_ts": f"{self.clock():.6f}"}]}

    def submit(self, view: dict[str, Any], user_id: str, typed: str, *, team: str | None = None,
               app_id: str | None = None) -> dict[str, Any]:
        """A `view_submission` payload: `user_id` typed `typed` into the modal `view` and pressed its button."""
        block = next(b for b in view["blocks"] if b["type"] == "input")
        return {"type": "view_submission", "api_app_id": app_id or self.app_id, "token": "legacy-verification-token",
                "team": {"id": team or self.team, "domain": "fake"}, "user": self.user(user_id, team),
                "trigger_id": f"{next(_n)}.trigger", "response_urls": [],
                "view": {"id": view["id"], "team_id": team or self.team, "type": "modal", "callback_id": view["callback_id"],
                         "private_metadata": view["private_metadata"], "hash": f"{next(_n)}.hash",
                         "state": {"values": {block["block_id"]: {block["element"]["action_id"]: {
                             "type": "plain_text_input", "value": typed}}}}}}

    def body(self, payload: dict[str, Any]) -> bytes:
        return ("payload=" + urllib.parse.quote(json.dumps(payload), safe="")).encode()

    def headers(self, body: bytes, *, secret: str | None = None, at: float | None = None) -> dict[str, str]:
        ts = str(int(self.clock() if at is None else at))
        sig = hmac.new((secret or self.secret).encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + sig,
                "Content-Type": "application/x-www-form-urlencoded"}

    def post(self, url: str, payload: dict[str, Any] | None = None, *, body: bytes | None = None,
             headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, str]:
        """POST a signed request to the app's Request URL; (status, response body)."""
        body = self.body(payload) if body is None else body
        request = urllib.request.Request(url, data=body, method="POST", headers=headers or self.headers(body))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
