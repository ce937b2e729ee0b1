"""Review of `handoff-tui serve`'s authentication, end to end: a real server process and real HTTP.

- the HttpOnly cookie that replaces `?token=` must not hold the token itself: cookies are not
  isolated by port (RFC 6265 §8.5), so every other HTTP service on the same host name (any port)
  receives `handoff_viewer` in its Cookie header, and would learn the shared secret;
- a token that is not ASCII (a wrong one typed by a viewer) is refused as a wrong token (401,
  saying why), not a 500 with a traceback on the server's stderr;
- with both `--token` and `--trust-header`, the header must not let in a peer that is not the
  proxy: a request straight to the server carrying a forged header skips the token. (Either
  refusing the two together, or trusting the header only from the proxy's own address, passes.)
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from conftest import ROOT
from test_tui_serve import free_port, wait_listening

pytestmark = pytest.mark.e2e

TOKEN = "s3cret-for-tests"


def _serve(tmp_path: Path, bind: str, *auth: str) -> tuple[subprocess.Popen, int]:
    folder = tmp_path / "fleet"
    folder.mkdir(exist_ok=True)
    ledger = folder / "ledger.yaml"
    ledger.write_bytes((ROOT / "ledgers" / "tls-rotation.yaml").read_bytes())
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8"}
    server = subprocess.Popen([sys.executable, "-m", "tui.main", "serve", str(ledger), "--bind", f"{bind}:{port}", *auth],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return server, port


def _stop(server: subprocess.Popen) -> str:
    server.terminate()
    try:
        _, err = server.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        _, err = server.communicate()
    return err


def _outward_address() -> str:
    """An address of this host that is not loopback (what a peer on the network reaches)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.254", 9))  # no packet is sent: only the route's source address is chosen
        address = s.getsockname()[0]
    assert not address.startswith("127."), f"no outward IPv4 address on this host ({address})"
    return address


async def test_the_sign_in_cookie_does_not_carry_the_token_itself(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, "127.0.0.1", "--token", TOKEN)
    try:
        assert "read-only observers on" in server.stdout.readline()
        wait_listening(port)
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(f"{base}/?token={TOKEN}", allow_redirects=False) as response:
                assert response.status == 303
                cookies = response.headers.getall("Set-Cookie")
            async with http.get(f"{base}/") as response:
                assert response.status == 200  # the cookie still signs the browser in
        leaked = [c for c in cookies if TOKEN in c]
        assert not leaked, f"the token itself is stored in a cookie, sent to every port of this host: {leaked}"
    finally:
        _stop(server)


async def test_a_non_ascii_token_is_refused_as_a_wrong_token(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, "127.0.0.1", "--token", TOKEN)
    try:
        assert "read-only observers on" in server.stdout.readline()
        wait_listening(port)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/?token=s3cr%C3%A9t") as response:
                status, text = response.status, await response.text()
    finally:
        err = _stop(server)
    assert status == 401 and "not authenticated" in text, f"{status}: {text!r}\nserver stderr: {err[-800:]}"
    assert "Traceback" not in err, err[-800:]


async def test_a_forged_trusted_header_from_another_peer_does_not_skip_the_token(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, "0.0.0.0", "--token", TOKEN, "--trust-header", "X-Forwarded-User")
    try:
        first = server.stdout.readline()
        if "read-only observers on" not in first:
            assert server.wait(timeout=20) == 2  # refusing the two together is a fix too
            return
        wait_listening(port)
        peer = _outward_address()
        async with aiohttp.ClientSession() as http:
            # Straight to the server, not through the proxy: no token, the header typed by hand.
            async with http.get(f"http://{peer}:{port}/", headers={"X-Forwarded-User": "alice"},
                                allow_redirects=False) as response:
                status = response.status
        assert status == 401, (f"{peer} is no proxy, yet its hand-made X-Forwarded-User: alice got {status} without "
                               "the token (and alice's own 'since you last looked' mark)")
    finally:
        _stop(server)
