"""`handoff-tui serve` for observers, end to end: a real server process, real HTTP and websockets,
and Debian's headless Chromium driven over its DevTools protocol. Without the token or the trusted
header the page is refused; a websocket from a foreign (or no) Origin is refused; the page fetches
nothing from the internet; Chromium shows the read-only screen (the READ-ONLY chip, in the theme's
read-only colour, is in the screenshot); a viewer beyond --max-viewers is refused; the ledger's
folder is byte-identical afterwards."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp  # the test extra installs textual-serve and aiohttp; missing, the run fails here
import pytest
import textual_serve  # noqa: F401 - imported so a missing install fails at collection, never skips
from conftest import ROOT

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
TOKEN = "s3cret-for-tests"
READ_ONLY_CHIP = (0xD7, 0x87, 0x00)  # themes: "mode-readonly" of the default theme


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, timeout: float = 30.0) -> None:
    """The startup line comes before the socket listens: poll until a connection is accepted (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on 127.0.0.1:{port}"
            time.sleep(0.05)


def pixels(png: bytes) -> list[tuple[int, ...]]:
    from tests.unit.test_audit_report import _pixels  # the suite's one PNG reader (no imaging library)

    return _pixels(png)


async def screenshot(url: str, ready, during=None, limit: float = 60.0) -> list[tuple[int, ...]]:
    """Open `url` in headless Chromium; its pixels once `ready(pixels)` holds (bounded by `limit`: the viewer's
    own handoff-tui process starts and paints at the speed of a loaded machine). `during` runs then, page open."""
    profile = tempfile.mkdtemp(prefix="handoff-chromium-")
    browser = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--hide-scrollbars", "--enable-unsafe-swiftshader",
                                "--use-gl=angle", "--use-angle=swiftshader", "--window-size=1000,600",
                                "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
                               stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "DevTools listening on" not in line:
            line = browser.stderr.readline()
            assert line or browser.poll() is None, "chromium exited before its DevTools port opened"
        port = re.search(r"127\.0\.0\.1:(\d+)/", line).group(1)
        async with aiohttp.ClientSession() as http:
            pages = await (await http.get(f"http://127.0.0.1:{port}/json")).json()
            target = next(p for p in pages if p["type"] == "page")
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as devtools:
                ids = iter(range(1, 1000))

                async def call(method: str, **params) -> dict:
                    n = next(ids)
                    await devtools.send_json({"id": n, "method": method, "params": params})
                    while True:
                        message = json.loads((await devtools.receive()).data)
                        if message.get("id") == n:
                            return message.get("result", {})

                await call("Page.enable")
                await call("Page.navigate", url=url)
                deadline = time.monotonic() + limit
                while True:
                    got = await call("Page.captureScreenshot", format="png")  # no data while the page loads
                    if "data" in got and ready(shot := pixels(base64.b64decode(got["data"]))):
                        break
                    assert time.monotonic() < deadline, f"{ready.__name__}: not so within {limit:.0f} s ({ready.__doc__})"
                    await asyncio.sleep(0.5)
                if during is not None:
                    await during()
                return shot
    finally:
        browser.kill()
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


def chip_of(shot: list[tuple[int, ...]], width: int = 1000) -> list[tuple[int, ...]]:
    """The top-left corner of a 1000-wide screenshot, where the header's READ-ONLY chip is painted."""
    return [shot[y * width + x][:3] for y in range(0, 20) for x in range(0, 200) if y * width + x < len(shot)]


def painted(shot: list[tuple[int, ...]]) -> bool:
    """The viewer's screen is up: its chip is drawn (the page starts blank, then shows textual-serve's intro)."""
    return chip_of(shot).count(READ_ONLY_CHIP) > 200


def folder_state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


async def test_an_observer_page_behind_a_token_in_chromium(tmp_path: Path) -> None:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: tests/run.sh installs Debian's chromium package"
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_bytes((ROOT / "ledgers" / "tls-rotation.yaml").read_bytes())
    before = folder_state(folder)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8"}
    server = subprocess.Popen([sys.executable, "-m", "tui.main", "serve", str(ledger), "--bind", f"127.0.0.1:{port}",
                               "--token", TOKEN, "--trust-header", "X-Forwarded-User", "--max-viewers", "1"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "read-only observers on" in server.stdout.readline()
        wait_listening(port)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # unsafe: keeps 127.0.0.1's cookies
            for refused in (f"{base}/", f"{base}/?token=wrong", f"{base}/static/js/textual.js"):
                async with http.get(refused) as response:
                    assert response.status == 401, refused
                    assert "not authenticated" in await response.text()
            async with http.get(f"{base}/", headers={"X-Forwarded-User": "carol"}) as response:
                assert response.status == 401  # with a token, the header only names the viewer: anyone may type it
            # The token becomes a cookie, and the page's URL loses it: a link copied from the
            # address bar (to share a view) must never carry the token.
            async with http.get(f"{base}/?token={TOKEN}&filter=db-1", allow_redirects=False) as response:
                assert response.status == 303 and response.headers["Location"] == "/?filter=db-1"
                kept = response.cookies["handoff_viewer"]
                assert kept["httponly"] and TOKEN not in kept.value and len(kept.value) == 64  # an HMAC of it, not the token
            async with http.get(f"{base}/?token={TOKEN}") as response:
                page = await response.text()
                assert response.status == 200 and str(response.url) == f"{base}/" and len(response.history) == 1
            # Nothing from the internet: every link and script is this server's.
            assert not re.findall(r'(?:href|src)="https?://(?!127\.0\.0\.1)', page) and "googleapis" not in page
            for origin in ("http://evil.example", None):
                headers = {"Origin": origin} if origin else {}
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused_ws:
                    await http.ws_connect(f"{base}/ws?token={TOKEN}", headers=headers)
                assert refused_ws.value.status == 403

            async def second_viewer() -> None:
                with pytest.raises(aiohttp.WSServerHandshakeError) as over:
                    await http.ws_connect(f"{base}/ws?token={TOKEN}", headers={"Origin": base})
                assert over.value.status == 503  # --max-viewers 1, and Chromium holds the one

            shot = await screenshot(f"{base}/?token={TOKEN}", painted, during=second_viewer)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert len(set(p[:3] for p in shot)) > 100  # text was drawn (a blank or intro page has a handful of colours)
    assert folder_state(folder) == before


@pytest.mark.parametrize("args, says", [
    (["--bind", "127.0.0.1:1"], "give --token-file (or HANDOFF_SERVE_TOKEN) or --trust-header"),
    (["--token", "x", "--bind", "nowhere"], "--bind 'nowhere': give HOST:PORT"),
])
def test_serve_refuses_to_start_open_or_misbound(tmp_path: Path, args: list[str], says: str) -> None:
    """No authentication, or a --bind that is not HOST:PORT: exit 2 with the fix, nothing served."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_bytes((ROOT / "ledgers" / "tls-rotation.yaml").read_bytes())
    done = subprocess.run([sys.executable, "-m", "tui.main", "serve", str(ledger), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_serve_refuses_an_invalid_ledger_naming_file_and_line(tmp_path: Path) -> None:
    """A ledger that does not parse: `handoff-tui: FILE:LINE:COL: ...` and exit 2, before any port opens."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("targets: [unclosed\n", encoding="utf-8")
    before = ledger.read_bytes()
    done = subprocess.run([sys.executable, "-m", "tui.main", "serve", str(ledger), "--token", "x", "--bind",
                           f"127.0.0.1:{free_port()}"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 2 and f"{ledger}:1:" in done.stderr, done.stderr
    assert ledger.read_bytes() == before
