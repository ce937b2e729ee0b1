"""`handoff-tui serve`, end to end: a real server, real viewer processes, a websocket client.
What a viewer's browser terminal receives is the bytes on its websocket (a review found each of
these open; mended in tui/):
- a shared link `?target=a` opens a's detail by itself; when a's next step cannot be rendered,
  the engine's message quotes the step's name: its escapes are made visible;
- a link's `?filter=` with a C1 CSI (U+009B) or an RTL override is refused, as C0 controls are;
- a viewer's `resize` message (and the websocket's `?width=&height=`) is bounded (tui.serve
  MAX_COLUMNS x MAX_ROWS): one observer cannot make its viewer process paint a 6000x6000 screen
  (hundreds of MB), so `--max-viewers` bounds what the server's host spends.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from conftest import ROOT
from test_tui_serve import free_port, wait_listening

from tests.escape_ledgers import UNRENDERABLE

pytestmark = pytest.mark.e2e

TOKEN = "s3cret-for-tests"
PAINT = 60.0


def _serve(tmp_path: Path, text: str) -> tuple[subprocess.Popen, int]:
    folder = tmp_path / "fleet"
    folder.mkdir(exist_ok=True)
    ledger = folder / "ledger.yaml"
    ledger.write_text(text, encoding="utf-8")
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8"}
    server = subprocess.Popen([sys.executable, "-m", "tui.main", "serve", str(ledger), "--bind", f"127.0.0.1:{port}",
                               "--token", TOKEN], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    return server, port


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()


async def _view(port: int, query: str, *, until: str, then: list | None = None,
                after: Callable[[str], bool] | None = None, size: tuple[int, int] = (120, 40)) -> str:
    """Sign in, open the page `/?QUERY`, connect its websocket and return what the terminal received:
    everything up to `until` (the product's answer to the link), then, once `then` is sent, up to
    what `after` waits for in what came after it (the viewer's answer to those messages), and then
    the viewer's next paint. The viewer paints each frame as one message: everything it drew with
    its answer has arrived once a later message has."""
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        assert (await http.get(f"{base}/?token={TOKEN}")).status == 200
        page = await (await http.get(f"{base}/?{query}")).text()
        url = re.search(r"ws://[^\"']+", page).group(0)
        received = ""
        async with http.ws_connect(f"{url}?width={size[0]}&height={size[1]}", headers={"Origin": base},
                                   max_msg_size=0) as ws:
            received = await _read_until(ws, received, lambda got: until in got, f"{until!r} never painted")
            for message in then or []:
                await ws.send_json(message)
            sent = len(received)
            if after is not None:
                received = await _read_until(ws, received, lambda got: after(got[sent:]),
                                             f"no answer to {then} painted")
            answered = len(received)
            received = await _read_until(ws, received, lambda got: len(got) > answered, "no paint after the answer")
        return received


async def _read_until(ws, received: str, done: Callable[[str], bool], what: str) -> str:
    """Read (bounded by PAINT) until `done(received)` holds."""
    deadline = time.monotonic() + PAINT
    while not done(received):
        assert time.monotonic() < deadline, f"{what} within {PAINT:.0f} s; received: {received[-2000:]!r}"
        received += await _read(ws, 0.5)
    return received


async def _read(ws, timeout: float) -> str:
    try:
        message = await ws.receive(timeout=timeout)
    except asyncio.TimeoutError:
        return ""
    if message.type == aiohttp.WSMsgType.BINARY:
        return message.data.decode("utf-8", "replace")
    return message.data if message.type == aiohttp.WSMsgType.TEXT else ""


async def test_a_target_link_sends_no_escape_from_the_ledger_to_the_browser(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, UNRENDERABLE)
    try:
        received = await _view(port, "target=a", until="could not render")
    finally:
        _stop(server)
    assert "could not render" in received
    assert "\x1b]0;pwned" not in received, "the ledger's OSC 0 reached the viewer's terminal"


async def test_a_filter_link_sends_no_c1_or_bidi_control_to_the_browser(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, UNRENDERABLE)
    try:
        # ?filter=a<U+009B>2J<U+202E>x (a C1 CSI "erase display" and an RTL override); the screen's
        # one line saying the link's filter was refused is its answer to the link
        received = await _view(port, "filter=a%C2%9B2J%E2%80%AEx", until="not applied")
    finally:
        _stop(server)
    assert "READ-ONLY" in received
    assert "\x9b" not in received and "\u202e" not in received, "the link's controls reached the viewer's terminal"


def _viewer_rss_kb(server: subprocess.Popen) -> int:
    out = subprocess.run(["ps", "-o", "rss=", "--ppid", str(server.pid)], capture_output=True, text=True).stdout
    return max((int(x) for x in out.split()), default=0)


async def test_one_viewer_cannot_make_its_process_paint_an_unbounded_screen(tmp_path: Path) -> None:
    """The cap on viewers is the server's bound on memory (docs: ~70 MB a viewer); a resize is not clamped."""
    server, port = _serve(tmp_path, UNRENDERABLE)
    peak = 0
    try:
        # Until the viewer has painted at its new size (a row below the first 40), and once more:
        # the whole of that screen was drawn (and held) by then.
        task = asyncio.create_task(_view(port, "", until="READ-ONLY", then=[["resize", {"width": 6000, "height": 6000}]],
                                         after=lambda got: any(int(row) > 40 for row in re.findall(r"\x1b\[(\d+);\d+H", got))))
        while not task.done():
            peak = max(peak, _viewer_rss_kb(server))
            await asyncio.sleep(0.5)
        received = await task
        peak = max(peak, _viewer_rss_kb(server))
    finally:
        _stop(server)
    assert "READ-ONLY" in received
    assert peak < 250_000, f"one viewer's process grew to {peak // 1024} MB after one resize message"
