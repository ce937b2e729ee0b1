"""How `handoff-tui serve` ends, and that its viewers end with it: a real server, a real
viewer's websocket (aiohttp, as a browser's page opens it), real viewer processes.

A hang-up (the SSH session that started the server ended) stops the server as SIGTERM
does: every viewer's process is told to quit. Under `nohup` the hang-up ends nothing. A
server killed outright tells its viewers nothing: each viewer sees its server's pipe hang
up and quits on its own, instead of holding its memory for ever with nobody to serve. The
ledger's folder is byte-identical afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from conftest import ROOT
from test_tui_serve import folder_state, free_port, wait_listening

from tests.conftest import RUNBOOK_LEDGER

pytestmark = pytest.mark.e2e

TOKEN = "s3cret-for-tests"
PAINT = 60.0  # bound on a viewer's process starting and painting on a loaded 2-core machine
ENDS_WITHIN = 20.0  # seconds for the server, or a viewer, to end (a viewer looks once a second)


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody has reaped yet has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _viewers(server: int) -> list[int]:
    """The viewer processes (`handoff-tui LEDGER --read-only`) under `server`."""
    parents, commands = {}, {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                commands[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue

    def under(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == server:
                return True
        return False

    return [pid for pid, argv in commands.items() if b"--read-only" in argv and b"tui.main" in argv and under(pid)]


class Viewer:
    """A viewer's websocket, as a browser's page holds it: open, and read all along (a page
    that stopped reading would stall its server's writes, which no browser does)."""

    def __init__(self) -> None:
        self.drawn = b""
        self.http = aiohttp.ClientSession()

    async def open(self, base: str, server: subprocess.Popen) -> list[int]:
        """Open the viewer and wait until its screen is drawn; the viewer's processes."""
        ws = await self.http.ws_connect(f"{base}/ws?token={TOKEN}", headers={"Origin": base})
        await ws.send_str('["resize", {"width": 100, "height": 30}]')
        self.reader = asyncio.create_task(self._read(ws))
        deadline = time.monotonic() + PAINT
        while b"READ-ONLY" not in self.drawn:
            assert time.monotonic() < deadline and server.poll() is None, (
                f"the viewer never drew its screen: {self.drawn[-300:]!r}")
            await asyncio.sleep(0.1)
        viewers = _viewers(server.pid)
        assert viewers, "no viewer process under the server"
        return viewers

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for message in ws:
            if message.type == aiohttp.WSMsgType.BINARY:
                self.drawn += message.data

    async def close(self) -> None:
        if hasattr(self, "reader"):
            self.reader.cancel()
        await self.http.close()


def _serve(tmp_path: Path, ignore_hangup: bool = False) -> tuple[subprocess.Popen, Path, str]:
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_bytes((ROOT / "ledgers" / "pg16-fleet.yaml").read_bytes())
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8"}

    def setup() -> None:
        if ignore_hangup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it

    server = subprocess.Popen([sys.executable, "-m", "tui.main", "serve", str(ledger), "--bind", f"127.0.0.1:{port}",
                               "--token", TOKEN], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, preexec_fn=setup)
    assert "read-only observers on" in server.stdout.readline()
    wait_listening(port)
    return server, folder, f"http://127.0.0.1:{port}"


async def _wait_gone(pids: list[int]) -> list[int]:
    """Wait (bounded) until none of `pids` runs; those still running."""
    deadline = time.monotonic() + ENDS_WITHIN
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return [p for p in pids if _running(p)]


async def _exit_of(server: subprocess.Popen) -> int | None:
    """The server's exit code within ENDS_WITHIN, or None."""
    deadline = time.monotonic() + ENDS_WITHIN
    while server.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return server.poll()


def _end(server: subprocess.Popen, viewers: list[int]) -> None:
    if server.poll() is None:
        server.kill()
        server.wait()
    for pid in viewers:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["sigterm", "hang-up", "sigkill", "sigterm, the viewer hung"])
async def test_the_viewers_end_with_their_server(tmp_path: Path, how: str) -> None:
    """SIGTERM or a hang-up stops the server (exit 0) within seconds, while a page still
    shows a viewer, and it stops its viewers; a server killed outright leaves each viewer to
    find out on its own. A viewer that cannot quit when told (hung; here stopped with
    SIGSTOP) is killed after the server's grace (tui.serve.STOP_GRACE). No viewer process
    outlives its server."""
    server, folder, base = _serve(tmp_path)
    before = folder_state(folder)
    viewers: list[int] = []
    viewer = Viewer()
    try:
        viewers = await viewer.open(base, server)
        if how.endswith("hung"):
            for pid in viewers:
                os.kill(pid, signal.SIGSTOP)
        if how != "sigkill":
            server.send_signal(signal.SIGHUP if how == "hang-up" else signal.SIGTERM)
            code = await _exit_of(server)
            assert code == 0, f"the server did not stop within {ENDS_WITHIN:.0f} s of a {how} (exit {code})"
        else:
            server.kill()
            server.wait()
        left = await _wait_gone(viewers)
        assert not left, f"viewer processes {left} still run {ENDS_WITHIN:.0f} s after their server ended ({how})"
    finally:
        await viewer.close()
        _end(server, viewers)
    assert folder_state(folder) == before


async def test_under_nohup_a_hang_up_ends_nothing(tmp_path: Path) -> None:
    server, folder, base = _serve(tmp_path, ignore_hangup=True)
    viewers: list[int] = []
    viewer = Viewer()
    try:
        viewers = await viewer.open(base, server)
        server.send_signal(signal.SIGHUP)
        await asyncio.sleep(3)  # a server that would stop on it stops within a second
        assert server.poll() is None and all(_running(p) for p in viewers), "a hang-up under nohup ended the server"
        server.terminate()
        assert await _exit_of(server) == 0
        assert not await _wait_gone(viewers)
    finally:
        await viewer.close()
        _end(server, viewers)


# A served viewer's own driver (Textual picks its web driver from TEXTUAL_DRIVER, as
# textual-serve starts it), writing frames to a server that has gone: its stdout is a pipe
# whose other end is closed before the first frame.
DRAWS_TO_A_GONE_SERVER = """
import asyncio, sys
from tui.app import make_app

async def draw() -> None:
    app = make_app(sys.argv[1], watch=False, read_only=True)
    driver = app.driver_class(app)
    assert driver.is_web, driver
    for i in range(50):
        driver.write("\\x1b[H" + "db-1 done " * 50)
        driver.write_meta({"type": "frame", "n": i})

asyncio.run(draw())
print("ended", file=sys.stderr, flush=True)
"""


def test_frames_written_to_a_server_that_has_gone_are_dropped(tmp_path: Path) -> None:
    """The server was killed while the viewer draws: each write to its pipe fails (EPIPE).
    Raised into the screen, a BrokenPipeError stalled the viewer before its look at the pipe
    (the fresh-clone run's failure under load); the viewer's driver drops the writes instead."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    before = folder_state(folder)
    keys, to_viewer = os.pipe()  # the viewer's stdin is the server's pipe, as textual-serve gives it
    read_end, write_end = os.pipe()
    os.close(read_end)  # the server has gone before the first frame
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEXTUAL")}
    env.update(PYTHONPATH=str(ROOT), XDG_STATE_HOME=str(tmp_path / "state"),
               TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver")
    try:
        done = subprocess.run([sys.executable, "-c", DRAWS_TO_A_GONE_SERVER, str(ledger)], cwd=str(ROOT), env=env,
                              stdin=keys, stdout=write_end, stderr=subprocess.PIPE, timeout=PAINT)
    finally:
        for fd in (keys, to_viewer, write_end):
            os.close(fd)
    assert (done.returncode, done.stderr.decode()[-600:]) == (0, "ended\n")
    assert folder_state(folder) == before
