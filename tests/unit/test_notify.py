"""Paging: a real webhook server on 127.0.0.1, a real command, and failures that never raise."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from engine.ledger.model import Notifier
from engine.notify import PageResult, send_pages
from engine.session.runner import run_step

PY = sys.executable


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(self.server.status)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):  # keep test output clean
        return


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _Recorder)
    httpd.received = []
    httpd.status = 200
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(httpd, path="/T000/B000/secret"):
    return f"http://127.0.0.1:{httpd.server_address[1]}{path}"


def _send(notifiers, message="db-18 needs approval", event="approval_needed", **kw):
    kw.setdefault("backoff", 0.01)  # retries are tested for what they do, not for how long they wait
    return send_pages(notifiers, message, event=event, ledger_dir="/srv/ledgers", python=PY, run_command=run_step, **kw)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_webhook_posts_slack_json(server):
    """The webhook gets a JSON POST with `text` and `event`; the secret path is not echoed."""
    results = _send([Notifier(webhook=_url(server))], message="cutover db-18 — needs you")
    assert results == [PageResult("webhook 127.0.0.1", True, None)]
    path, ctype, body = server.received[0]
    assert path == "/T000/B000/secret" and ctype == "application/json"
    assert json.loads(body) == {"text": "cutover db-18 — needs you", "event": "approval_needed"}


def test_webhook_http_error_is_a_result(server):
    """A 500 from the webhook is ok=False with the status, not an exception, after three tries."""
    server.status = 500
    [result] = _send([Notifier(webhook=_url(server))])
    assert not result.ok and "500" in result.error
    assert result.attempts == 3 and len(server.received) == 3


def test_webhook_is_retried_until_it_answers(server):
    """A passing failure (503, then 200) is tried again: the page is sent on the second try."""
    statuses = [503, 200]

    class Flaky(_Recorder):
        def do_POST(self):  # noqa: N802
            self.server.status = statuses.pop(0)
            super().do_POST()

    server.RequestHandlerClass = Flaky
    [result] = _send([Notifier(webhook=_url(server))])
    assert result.ok and result.attempts == 2 and len(server.received) == 2


def test_webhook_client_error_is_not_retried(server):
    """A 404 will not pass by itself: one try, then the failure."""
    server.status = 404
    [result] = _send([Notifier(webhook=_url(server))])
    assert not result.ok and result.attempts == 1 and len(server.received) == 1


def test_webhook_to_closed_port_does_not_raise():
    """Nobody listening: ok=False with the reason."""
    [result] = _send([Notifier(webhook=f"http://127.0.0.1:{_closed_port()}/hook")], timeout=2)
    assert not result.ok and result.error


def test_webhook_must_be_http():
    """Other URL schemes (file:, ftp:) are refused, not fetched."""
    [result] = _send([Notifier(webhook="file:///etc/passwd")])
    assert not result.ok and "http" in result.error


def test_run_notifier_gets_message_as_last_arg(tmp_path):
    """A run notifier's placeholders are filled per argument; the message comes last, literally."""
    out = tmp_path / "got.json"
    script = "import json, sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w'))"
    message = "db-18 drift; rm -rf x $(touch pwned) `touch pwned2`"
    notifier = Notifier(run=["{python}", "-c", script, str(out), "{ledger_dir}/x", "-rf"])
    results = _send([notifier], message=message)
    assert [r.ok for r in results] == [True]
    assert json.loads(out.read_text()) == [str(out), "/srv/ledgers/x", "-rf", message]
    # The journal says what ran, not the template: no `{python}` left for the log to show.
    assert "{" not in results[0].target.replace(script, "") and "/srv/ledgers/x" in results[0].target
    assert sorted(p.name for p in tmp_path.iterdir()) == ["got.json"]


def test_run_notifier_failures_are_results():
    """A failing, missing or hanging command gives ok=False with a reason."""
    failing = Notifier(run=[PY, "-c", "import sys; print('no route'); sys.exit(4)"])
    missing = Notifier(run=["/nonexistent/pager"])
    hanging = Notifier(run=[PY, "-c", "import time; time.sleep(30)"])
    results = _send([failing, missing, hanging], timeout=0.5)
    assert [r.ok for r in results] == [False, False, False]
    assert results[0].error == "exit 4: no route" and results[0].attempts == 3
    assert "127" in results[1].error and results[1].attempts == 1  # cannot run: not retried
    assert "0.5s" in results[2].error


def test_on_filters_events(server):
    """A notifier with `on:` only hears those events; one without hears all."""
    only_drift = Notifier(webhook=_url(server, "/drift"), on=["drift"])
    everything = Notifier(webhook=_url(server, "/all"))
    assert len(_send([only_drift, everything], event="approval_needed")) == 1
    assert len(_send([only_drift, everything], event="drift")) == 2
    assert [p for p, _, _ in server.received] == ["/all", "/drift", "/all"]


def test_empty_notifier_is_reported():
    """A notify entry with neither webhook nor run says so instead of vanishing."""
    [result] = _send([Notifier()])
    assert not result.ok and "neither" in result.error
