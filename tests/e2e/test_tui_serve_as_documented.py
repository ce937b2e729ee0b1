"""`handoff-tui serve` started as documented (docs/operating.md "Observers in a browser"): the
token kept off the command line, the authenticating proxy's public URL, a sign-in cookie that is
no UTF-8. A real server process, real HTTP (web review, findings 7 to 9)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

TOKEN = "s3cret-for-tests"
PUBLIC = "https://handoff.example.com"  # what the browser sees: the authenticating proxy's address


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, int]:
    return _serve_with_env(tmp_path, {}, *args)


def _serve_with_env(tmp_path: Path, extra_env: dict[str, str], *args: str) -> tuple[subprocess.Popen, int]:
    folder = tmp_path / "fleet"
    folder.mkdir(exist_ok=True)
    ledger = folder / "ledger.yaml"
    ledger.write_bytes((ROOT / "ledgers" / "tls-rotation.yaml").read_bytes())
    port = _free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8",
           **extra_env}
    server = subprocess.Popen([sys.executable, "-m", "tui.main", "serve", str(ledger), "--bind", f"127.0.0.1:{port}", *args],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
    return server, port


def _stop(server: subprocess.Popen) -> str:
    server.terminate()
    try:
        _, err = server.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        _, err = server.communicate()
    return err


def _raw(port: int, request: bytes) -> bytes:
    """One HTTP request as these bytes (a browser, a script, a proxy): the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data and (b"101 Switching" in data or b"Content-Length" in data and data.endswith(b"\n")):
                break
        return data


def test_a_sign_in_cookie_that_is_not_utf8_is_refused_as_a_wrong_token(tmp_path: Path) -> None:
    """Promise (tui/serve.py `_authenticated`): "Compared as UTF-8 bytes: a wrong token in any
    script is a wrong token, never a server error"; "Refusals are plain HTTP errors that say why".

    What happens: aiohttp decodes header bytes with surrogateescape, so a `handoff_viewer` cookie
    holding a byte that is not UTF-8 (`\\xff`) reaches `cookie.encode()` (tui/serve.py:138) as a
    lone surrogate: UnicodeEncodeError, a 500 "Server got itself in trouble" and a traceback on
    the server's stderr for every such request (the ?token= form of this was mended; the
    cookie's was not)."""
    server, port = _serve(tmp_path, "--token", TOKEN)
    try:
        answer = _raw(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: handoff_viewer=\xff\xfe\r\n"
                            b"Connection: close\r\n\r\n")
    finally:
        err = _stop(server)
    status = answer.split(b"\r\n", 1)[0]
    assert b" 401 " in status and b"not authenticated" in answer, f"{status!r}: {answer[-200:]!r}"
    assert "Traceback" not in err, err[-800:]


def test_behind_the_authenticating_proxy_the_page_can_open_its_websocket(tmp_path: Path) -> None:
    """Promise (docs/operating.md "Observers in a browser"): `handoff-tui serve ledger.yaml --bind
    127.0.0.1:8080 --trust-header X-Forwarded-User   # behind an authenticating proxy`; "its
    websocket must come from the page's own Origin".

    What happens: the page served through the proxy (Host: handoff.example.com, https) tells
    the browser to open `ws://127.0.0.1:PORT/ws/TICKET` (textual-serve's public_url, made from
    --bind: the observer's own machine, and plain ws from an https page), and the websocket
    that does arrive through the proxy carries the page's real Origin, which `_guard`
    (tui/serve.py:157) refuses because it is not `http://127.0.0.1:PORT`: 403. The documented
    proxy set-up shows every observer an empty page. The fix: `--public-url`, the address the
    proxy serves (never taken from the request's headers, which any client sets)."""
    server, port = _serve(tmp_path, "--trust-header", "X-Forwarded-User", "--public-url", PUBLIC)
    proxied = (b"Host: handoff.example.com\r\nX-Forwarded-Host: handoff.example.com\r\nX-Forwarded-Proto: https\r\n"
               b"X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-User: alice\r\n")
    try:
        page = _raw(port, b"GET /?target=web-01 HTTP/1.1\r\n" + proxied + b"Connection: close\r\n\r\n")
        assert b" 200 " in page.split(b"\r\n", 1)[0], page[:300]
        url = re.search(rb"wss?://[^\"'\s]+", page).group(0).decode()
        path = "/" + url.split("/", 3)[3]
        upgrade = _raw(port, f"GET {path}?width=80&height=24 HTTP/1.1\r\n".encode() + proxied +
                       f"Origin: {PUBLIC}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
    finally:
        _stop(server)
    assert url.startswith("wss://handoff.example.com/"), f"the page sends the observer's browser to {url}"
    assert b" 101 " in upgrade.split(b"\r\n", 1)[0], f"the proxied websocket is refused: {upgrade[:300]!r}"


def test_the_documented_token_is_not_in_the_servers_command_line(tmp_path: Path) -> None:
    """Promise (docs/operating.md "Observers in a browser"): the token comes from `--token-file`
    (or HANDOFF_SERVE_TOKEN), never from the command line: every user of the host reads a
    process's argv with `ps -eo args` (/proc/PID/cmdline is world-readable), and the server
    listens on that same host's 127.0.0.1. (The reviewer's test started it with `--token`, then
    the documented way; `--token` stays, with a warning: see the next test.)"""
    secret = tmp_path / "serve.token"
    secret.write_text(TOKEN + "\n")
    secret.chmod(0o600)
    server, port = _serve(tmp_path, "--token-file", str(secret))
    try:
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        mode = Path(f"/proc/{server.pid}/cmdline").stat().st_mode
        signed_in = _raw(port, f"GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        wrong = _raw(port, b"GET /?token=s3cret-for-tests%0A HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    finally:
        _stop(server)
    assert not (TOKEN in cmdline and mode & 0o004), f"any local user reads the serve token with ps: {cmdline!r}"
    assert b" 303 " in signed_in.split(b"\r\n", 1)[0], signed_in[:300]  # the file's first line, its newline not part of it
    assert b" 401 " in wrong.split(b"\r\n", 1)[0], wrong[:300]


def test_a_token_on_the_command_line_still_works_and_warns_that_local_users_see_it(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, "--token", TOKEN)
    try:
        signed_in = _raw(port, f"GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    finally:
        err = _stop(server)
    assert b" 303 " in signed_in.split(b"\r\n", 1)[0], signed_in[:300]
    assert "--token on the command line is visible to every local user (ps)" in err, err


@pytest.mark.parametrize(("args", "says"), [
    (["--token-file", "/nonexistent/serve.token"], "--token-file /nonexistent/serve.token: [Errno 2]"),
    (["--token-file", "EMPTY"], "its first line is empty"),
    (["--token-file", "EMPTY", "--token", "x"], "give --token-file or --token, not both"),
    (["--trust-header", "X-Forwarded-User", "--public-url", "handoff.example.com"], "give http(s)://HOST[:PORT]"),
    (["--trust-header", "X-Forwarded-User", "--public-url", "https://handoff.example.com/?a=1"], "no user, query"),
])
def test_a_token_file_or_public_url_that_cannot_be_used_is_a_usage_error(tmp_path: Path, args: list[str], says: str) -> None:
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    ledger = tmp_path / "ledger.yaml"
    ledger.write_bytes((ROOT / "ledgers" / "tls-rotation.yaml").read_bytes())
    done = subprocess.run([sys.executable, "-m", "tui.main", "serve", str(ledger), "--bind", "127.0.0.1:1",
                           *[str(empty) if a == "EMPTY" else a for a in args]],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_the_token_from_the_environment_signs_in_and_stays_off_the_command_line(tmp_path: Path) -> None:
    server, port = _serve_with_env(tmp_path, {"HANDOFF_SERVE_TOKEN": TOKEN})
    try:
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
        signed_in = _raw(port, f"GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    finally:
        err = _stop(server)
    assert TOKEN.encode() not in cmdline
    assert b" 303 " in signed_in.split(b"\r\n", 1)[0], signed_in[:300]
    assert "warning" not in err, err
