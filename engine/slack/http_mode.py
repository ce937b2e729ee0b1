"""HTTP mode (`--http HOST:PORT`): Slack's interactivity Request URL, served at
`/slack/events` by the standard library's threading HTTP server (no web framework:
one route, form-encoded bodies; put TLS in front, as for any Request URL).

Each request is checked against Slack's signature and timestamp window first
(engine.slack.verify); only then is its payload read and handed to the Hub.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from engine.errors import UsageError
from engine.slack.verify import signature_problem

PATH = "/slack/events"
MAX_BODY = 1 << 20


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--http {text!r}: expected HOST:PORT, e.g. 127.0.0.1:3000")
    return host.strip("[]"), int(port)


def serve(hub, address: str) -> Callable[[], None]:
    """Start serving in a thread; returns what stops it."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # the default prints every request to stderr
            return

        def _answer(self, code: int, body: dict | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?")[0] != PATH:
                return self._answer(404, {"error": f"this process serves {PATH} only"})
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._answer(413)
            body = self.rfile.read(length)
            payload = _payload(body)
            why = signature_problem(hub.secrets.signing_secret or "", self.headers.get("X-Slack-Request-Timestamp"),
                                    self.headers.get("X-Slack-Signature"), body, now=hub.now())
            if why:
                hub.unauthentic(payload, why)
                return self._answer(401, {"error": "invalid signature"})
            if payload is None:
                return self._answer(400, {"error": "no payload"})
            if payload.get("type") == "url_verification":
                return self._answer(200, {"challenge": payload.get("challenge")})
            taken, ack = hub.received(payload)
            if not taken:
                return self._answer(503, {"error": "not stored; send it again"})
            self._answer(200, ack)

    host, port = _address(address)
    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as err:
        raise UsageError(f"--http {address}: cannot listen there ({err.strerror})") from None
    # Its shutdown waits for the loop's next look: a tenth of a second, not the default half.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="slack-http", daemon=True).start()
    hub.say(f"serving Slack's requests at http://{host}:{server.server_address[1]}{PATH}")
    return server.shutdown


def _payload(body: bytes) -> dict | None:
    """The JSON in a form body's `payload=` (interactivity) or the body itself (Events API)."""
    try:
        text = body.decode("utf-8")
        if text.lstrip().startswith("{"):
            data = json.loads(text)
        else:
            data = json.loads((parse_qs(text).get("payload") or ["null"])[0])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
