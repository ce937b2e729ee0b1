"""A fake Slack Web API on 127.0.0.1, in the test's own process, and the websocket
Slack's Socket Mode would open: `with FakeSlack(...) as slack: ... slack.url ...`.

Methods (POST /api/METHOD, JSON or form bodies, `Authorization: Bearer TOKEN`):
`auth.test`, `chat.postMessage`, `chat.update`, `views.open`, `chat.postEphemeral`
(bot token), `apps.connections.open` (app token: answers a ws:// URL this fake serves).
A wrong token is `invalid_auth`, as Slack says it. `POST /response/N` is a response_url
sink. `fail_next = N` answers the next N calls with HTTP 503 (Slack unreachable).
`refuse[CHANNEL] = "not_in_channel"` answers every post and edit in CHANNEL with that
error, as Slack does while the bot is not in it (or it is gone, or archived).
Everything received is kept (`calls`), so a test can read what Slack was shown.
"""

from __future__ import annotations

import itertools
import json
import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from websockets.sync.server import serve as ws_serve


class FakeSlack:
    """One workspace with one app: its team id, bot token and app token."""

    def __init__(self, *, team: str = "T0123", bot_token: str = "xoxb-fake-bot-token-0000",
                 app_token: str = "xapp-1-fake-app-token-0000") -> None:
        self.team, self.bot_token, self.app_token = team, bot_token, app_token
        self.calls: list[dict[str, Any]] = []
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, ts) -> message as it is now
        self.responses: list[dict[str, Any]] = []
        self.fail_next = 0
        self.refuse: dict[str, str] = {}
        self.lock = threading.Lock()
        self._ts = itertools.count(1)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.api_url = self.url + "/api/"
        self.acks: queue.Queue[dict] = queue.Queue()
        self.acked: list[str] = []  # every envelope id the app ever acked, in order (send_envelope drops others' acks)
        self.sockets: list[Any] = []
        self.ws = ws_serve(self._ws, "127.0.0.1", 0)
        self.ws_url = f"ws://127.0.0.1:{self.ws.socket.getsockname()[1]}/link"

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> FakeSlack:
        # A short poll: `shutdown()` at the end of every test waits for serve_forever's next look (0.5 s by default).
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                         name="fake-slack").start()
        threading.Thread(target=self.ws.serve_forever, daemon=True, name="fake-slack-ws").start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.ws.shutdown()

    # -- what the app did ------------------------------------------------------------

    def of(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [c["params"] for c in self.calls if c["method"] == method and c["ok"]]

    def everything(self) -> str:
        """All the fake received, as text (for "no secret in any message")."""
        with self.lock:
            return json.dumps([self.calls, self.responses])

    # -- Socket Mode -----------------------------------------------------------------

    def _ws(self, conn) -> None:
        self.sockets.append(conn)
        conn.send(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}}))
        try:
            for text in conn:
                data = json.loads(text)
                if "envelope_id" in data:
                    with self.lock:
                        self.acked.append(data["envelope_id"])
                    self.acks.put(data)
        except Exception:  # noqa: BLE001 - the client went away
            return

    def send_envelope(self, payload: dict[str, Any], *, timeout: float = 20, wait: bool = True) -> Any:
        """Deliver `payload` as an `interactive` envelope to the connected app; its ack (wait=False:
        its envelope id, at once; whether it was ever acked is then in `acked`)."""
        deadline = time.monotonic() + timeout
        while not self.sockets and time.monotonic() < deadline:
            time.sleep(0.05)
        envelope_id = f"env-{next(self._ts)}"
        self.sockets[-1].send(json.dumps({"envelope_id": envelope_id, "type": "interactive", "payload": payload,
                                          "accepts_response_payload": True, "retry_attempt": 0}))
        if not wait:
            return envelope_id
        while True:
            ack = self.acks.get(timeout=max(0.1, deadline - time.monotonic()))
            if ack["envelope_id"] == envelope_id:
                return ack

    # -- the Web API -----------------------------------------------------------------

    def answer(self, method: str, params: dict[str, Any], token: str | None) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                self.calls.append({"method": method, "params": params, "ok": False})
                return 503, {"ok": False, "error": "service_unavailable"}
            want = self.app_token if method == "apps.connections.open" else self.bot_token
            ok = token == want
            self.calls.append({"method": method, "params": params, "ok": ok})
            if not ok:
                return 200, {"ok": False, "error": "invalid_auth"}
            if method == "auth.test":
                return 200, {"ok": True, "team_id": self.team, "user_id": "UBOT", "bot_id": "BBOT", "team": "fake"}
            if method == "apps.connections.open":
                return 200, {"ok": True, "url": self.ws_url}
            if method in ("chat.postMessage", "chat.update") and params.get("channel") in self.refuse:
                self.calls[-1]["ok"] = False
                return 200, {"ok": False, "error": self.refuse[params["channel"]]}
            if method == "chat.postMessage":
                ts = f"{1700000000 + next(self._ts)}.000100"
                self.messages[(params["channel"], ts)] = dict(params, ts=ts)
                return 200, {"ok": True, "channel": params["channel"], "ts": ts, "message": params}
            if method == "chat.update":
                key = (params["channel"], params["ts"])
                if key not in self.messages:
                    return 200, {"ok": False, "error": "message_not_found"}
                self.messages[key] = {**self.messages[key], **params}
                return 200, {"ok": True, "channel": params["channel"], "ts": params["ts"]}
            if method == "views.open":  # the id is kept with its call under the same lock a views() reader takes
                self.calls[-1]["view_id"] = view_id = f"V{next(self._ts):06d}"
                return 200, {"ok": True, "view": {**params["view"], "id": view_id}}
            if method == "chat.postEphemeral":
                return 200, {"ok": True, "message_ts": f"{time.time():.6f}"}
            return 200, {"ok": False, "error": "unknown_method"}

    def views(self) -> list[dict[str, Any]]:
        """Every modal opened, with the id the fake gave it (the id a submission carries)."""
        with self.lock:
            ids = [c for c in self.calls if c["method"] == "views.open" and c["ok"]]
        return [c["params"]["view"] | {"id": c.get("view_id")} for c in ids]

    def ephemerals(self, user: str | None = None) -> list[str]:
        return [p["text"] for p in self.of("chat.postEphemeral") if user is None or p.get("user") == user]

    def message(self, ts_index: int = -1) -> dict[str, Any]:
        """A request message as it is now (the first posted: 0)."""
        posted = [p for p in self.of("chat.postMessage") if not p.get("thread_ts")]
        with self.lock:
            keys = [k for k, v in self.messages.items() if not v.get("thread_ts")]
        return self.messages[keys[ts_index]] if keys else posted[ts_index]


def _handler(fake: FakeSlack):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            if self.path.startswith("/response/"):
                fake.responses.append({"path": self.path, "body": body})
                return self._send(200, {"ok": True})
            method = self.path.removeprefix("/api/").split("?")[0]
            if body.lstrip().startswith("{"):
                params = json.loads(body)
            else:
                params = {k: v[0] for k, v in parse_qs(body).items()}
            auth = self.headers.get("Authorization") or ""
            token = auth.removeprefix("Bearer ").strip() or params.pop("token", None)
            status, data = fake.answer(method, params, token)
            self._send(status, data)

        def _send(self, status: int, data: dict) -> None:
            out = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    return Handler
