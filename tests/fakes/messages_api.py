"""A fake Anthropic Messages API on a real local port, answering from a script.

    python -m tests.fakes.messages_api --port 0 --script script.json [--log requests.jsonl]

prints the port it listens on (first line of stdout) and serves until SIGTERM or SIGINT.
Tests point the real `anthropic` SDK (or Claude Code) at it with ANTHROPIC_BASE_URL.

It serves `POST /v1/messages` (also with `?beta=true`), non-streaming JSON or, when the
body says `"stream": true`, server-sent events in the API's own order (message_start,
ping, content_block_start/delta/stop, message_delta, message_stop), and
`POST /v1/messages/count_tokens`. Anything else is a 404 in the API's error shape.
Which reply a request gets is the script's business (tests.fakes.messages_script); a
reply `{"hang": SECONDS}` holds the request unanswered that long (a hung API).
Every request is logged as one JSON line: its number, path, query, the headers that
matter, how it authenticated (never the secret), the body, the rule that answered, the
status, and the reply's content (so a test can see which turn produced a tool_use id).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.messages_script import ERROR_TYPES, Script

LOGGED_HEADERS = ("anthropic-version", "anthropic-beta", "content-type", "user-agent", "x-stainless-retry-count")


class FakeMessagesAPI:
    """The server: `with FakeMessagesAPI(script, log) as api: ... api.url ... api.requests()`."""

    def __init__(self, script: dict[str, Any] | str | Path, log: str | Path, *, port: int = 0) -> None:
        data = json.loads(Path(script).read_text()) if isinstance(script, (str, Path)) else script
        self.script = Script(data)
        self.log = Path(log)
        self.count = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread: threading.Thread | None = None
        self.released = threading.Event()  # set on stop: hung requests end (unanswered)

    def start(self) -> "FakeMessagesAPI":
        """Serve in one thread. Started already (`with api(...)` on what `api` started): nothing
        more. A second `serve_forever` on one server outlives `stop`, which ends only one of
        them, and then spins on the closed socket, taking a core and the test process's GIL."""
        if self.thread is None:
            self.thread = threading.Thread(target=self.server.serve_forever, name="fake-messages-api", daemon=True)
            self.thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        if self.thread is not None and self.thread.is_alive():
            self.server.shutdown()
            self.thread.join()
        self.server.server_close()

    def __enter__(self) -> "FakeMessagesAPI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests(self) -> list[dict[str, Any]]:
        """Every logged request so far, oldest first."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def next_number(self) -> int:
        with self.lock:
            self.count += 1
            return self.count

    def write_log(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self.lock, open(self.log, "a", encoding="utf-8") as fh:
            fh.write(line)


def _handler(api: FakeMessagesAPI):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # the JSON log is the record; stderr stays quiet

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._serve(None)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            self._serve(body if isinstance(body, dict) else {"unparsed": body})

        def _serve(self, body: dict[str, Any] | None) -> None:
            parts = urlsplit(self.path)
            number = api.next_number()
            entry: dict[str, Any] = {
                "n": number, "at": time.time(), "method": self.command, "path": parts.path,
                "query": {k: v[-1] for k, v in parse_qs(parts.query).items()},
                "headers": {h: self.headers[h] for h in LOGGED_HEADERS if self.headers.get(h) is not None},
                "auth": "x-api-key" if self.headers.get("x-api-key") else
                        "bearer" if (self.headers.get("authorization") or "").lower().startswith("bearer ") else None,
                "body": body,
            }
            rule, reply = (None, None)
            if body is not None and parts.path in ("/v1/messages", "/v1/messages/count_tokens"):
                rule, reply = api.script.choose(parts.path, body)
            entry["rule"] = rule
            if reply is not None and reply.get("hang"):
                # A hung API: the request is logged (so a test knows it arrived), then held
                # unanswered until the fake stops or `hang` seconds pass.
                api.write_log({**entry, "status": None, "hung": True})
                api.released.wait(float(reply["hang"]))
                return
            status, payload, headers, stream = self._answer(parts.path, body, reply, number)
            entry.update(status=status, stream=stream, reply=payload)
            api.write_log(entry)  # before answering: a client that has its answer finds it logged
            if stream:
                self._stream(payload)
            else:
                self._json(status, payload, headers)

        def _answer(self, path: str, body: dict[str, Any] | None, reply: dict[str, Any] | None,
                    number: int) -> tuple[int, dict[str, Any], dict[str, str], bool]:
            """(status, body, extra headers, stream it?) for one request."""
            if reply is not None and "status" in reply and reply["status"] >= 400:
                return self._error(reply)
            if body is None or path not in ("/v1/messages", "/v1/messages/count_tokens"):
                return self._error({"status": 404, "error": {"type": "not_found_error", "message": f"no route {path}"}})
            if path.endswith("/count_tokens"):
                tokens = (reply or {}).get("input_tokens") or api.script.usage(body, [], None)["input_tokens"]
                return 200, {"input_tokens": tokens}, {}, False
            return 200, _message(api, body, reply or {}, number), {}, bool(body.get("stream"))

        def _error(self, reply: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str], bool]:
            status = int(reply["status"])
            error = {"type": ERROR_TYPES.get(status, "api_error"), "message": "scripted error", **reply.get("error", {})}
            headers = {"retry-after": "0"} if status in (429, 529) else {}
            headers.update(reply.get("headers", {}))
            return status, {"type": "error", "error": error, "request_id": "req_fake"}, headers, False

        def _json(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.send_header("request-id", "req_fake")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("request-id", "req_fake")
            self.end_headers()
            for event in _events(message):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

    return Handler


def _message(api: FakeMessagesAPI, body: dict[str, Any], reply: dict[str, Any], number: int) -> dict[str, Any]:
    """A whole Message in the API's shape, from a scripted reply."""
    content = []
    for index, block in enumerate(reply.get("content", [{"type": "text", "text": "OK."}])):
        block = dict(block)
        if block["type"] == "tool_use":
            block = {"type": "tool_use", "id": block.get("id", f"toolu_fake{number:04d}_{index}"),
                     "name": block["name"], "input": block.get("input", {})}
        elif block["type"] == "thinking":
            block = {"type": "thinking", "thinking": block.get("thinking", ""), "signature": block.get("signature", "fake-signature")}
        else:
            block = {"type": "text", "text": block.get("text", "")}
        content.append(block)
    used = any(b["type"] == "tool_use" for b in content)
    return {
        "id": f"msg_fake{number:04d}", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
        "content": content, "stop_reason": reply.get("stop_reason", "tool_use" if used else "end_turn"),
        "stop_sequence": None, "usage": api.script.usage(body, content, reply.get("usage")),
    }


def _events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The server-sent events that stream `message`, in the API's order."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            raw = json.dumps(block["input"])
            half = len(raw) // 2
            for piece in (raw[:half], raw[half:]):  # two pieces: clients must join partial JSON
                events.append({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
        elif block["type"] == "thinking":
            events.append({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            events.append({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": block["thinking"]}})
            events.append({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": block["signature"]}})
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            text = block["text"]
            for at in range(0, max(len(text), 1), 40):
                events.append({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text[at:at + 40]}})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {k: usage[k] for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}})
    events.append({"type": "message_stop"})
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.messages_api", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--script", required=True, help="the JSON script (see tests.fakes.messages_script)")
    parser.add_argument("--log", help="request log, JSON lines (default: SCRIPT.requests.jsonl)")
    args = parser.parse_args(argv)
    api = FakeMessagesAPI(args.script, args.log or f"{args.script}.requests.jsonl", port=args.port)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    api.start()
    print(api.port, flush=True)
    done.wait()
    api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
