"""`handoff-tui serve` per viewer, end to end: a real server, real viewer processes, and Debian's
headless Chromium over DevTools. What a tab shows is read from the bytes its websocket received,
replayed on a small terminal grid (cursor moves and text; styles ignored). Shown here:
- viewers named by the trusted header each see what changed since *their own* last look
  (alice's look does not use up bob's); a second tab of alice reads the mark her first tab
  advanced, and the tab that closes last does not take it back (a tab holding an *older*
  reading, made deterministic, is tests/tui/test_served_view.py);
- `?target=db-18` opens on db-18's detail; an unknown target, a bad filter and an escape
  sequence in the link each open the normal screen with one line saying why (the escape shown,
  never obeyed); the link without the token is refused, as is its websocket;
- a token viewer's mark is keyed by their browser's cookie, not the serving OS user;
- the ledger's folder is byte-identical afterwards; marks live in the state folder only.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from conftest import ROOT
from test_tui_serve import CHROMIUM, folder_state, free_port, wait_listening

pytestmark = pytest.mark.e2e

TOKEN = "s3cret-for-tests"
SEEN_AFTER = "0.2"  # seconds a tab must be open to count as a look (HANDOFF_SERVE_SEEN_AFTER; its own behaviour,
# a tab closed sooner counts for nothing, is tests/tui/test_served_view.py; every wait here is on the mark itself)
PAINT = 60.0  # bound on a viewer's process starting and painting on a loaded 2-core machine


def replay(data: str, width: int = 240, height: int = 80) -> list[str]:
    """The screen after `data`: printable text at the cursor; CSI H/G/J/K move and erase; other escapes skipped."""
    grid = [[" "] * width for _ in range(height)]
    x = y = 0
    i = 0
    while i < len(data):
        c = data[i]
        if c == "\x1b" and data[i + 1:i + 2] == "[":
            m = re.match(r"\x1b\[([0-9;?<=>]*)([ -/]*)([@-~])", data[i:])
            if m is None:
                i += 1
                continue
            params = [int(p) if p.isdigit() else 0 for p in m.group(1).lstrip("?<=>").split(";")] if m.group(1) else []
            final = m.group(3)
            if final in "Hf":
                y = (params[0] if params and params[0] else 1) - 1
                x = (params[1] if len(params) > 1 and params[1] else 1) - 1
            elif final == "G":
                x = (params[0] if params and params[0] else 1) - 1
            elif final == "J" and params[:1] == [2]:
                grid = [[" "] * width for _ in range(height)]
            elif final == "K" and 0 <= y < height:
                grid[y][x:] = [" "] * (width - x)
            i += m.end()
        elif c == "\x1b" and data[i + 1:i + 2] in ("]", "P", "_"):
            end = re.search(r"\x07|\x1b\\", data[i:])
            i += end.end() if end else len(data) - i
        elif c == "\x1b":
            i += 2
        elif c == "\r":
            x, i = 0, i + 1
        elif c == "\n":
            y, i = y + 1, i + 1
        elif ord(c) < 32:
            i += 1
        else:
            if 0 <= y < height and 0 <= x < width:
                grid[y][x] = c
            x, i = x + 1, i + 1
    return ["".join(row).rstrip() for row in grid]


class Tab:
    """One page of the browser: its DevTools session, and the bytes its page's websocket received."""

    def __init__(self, http: aiohttp.ClientSession, devtools: Any, target_id: str, port: int) -> None:
        self.http, self.devtools, self.id, self.port = http, devtools, target_id, port
        self.received: list[bytes] = []
        self.ids = iter(range(1, 10_000))
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.devtools:
            event = json.loads(message.data)
            if "id" in event and event["id"] in self.answers:
                self.answers.pop(event["id"]).set_result(event.get("result", {}))
            elif event.get("method") == "Network.webSocketFrameReceived":
                frame = event["params"]["response"]
                if frame.get("opcode") == 2:  # binary: the terminal's bytes
                    self.received.append(base64.b64decode(frame["payloadData"]))

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        n = next(self.ids)
        self.answers[n] = asyncio.get_running_loop().create_future()
        await self.devtools.send_json({"id": n, "method": method, "params": params})
        return await asyncio.wait_for(self.answers[n], 30)

    def screen(self) -> str:
        """The terminal as it stands, whitespace runs collapsed (a toast's lines, a detail's fields)."""
        lines = replay(b"".join(self.received).decode("utf-8", "replace"))
        return " ".join(" ".join(lines).split())

    async def wait_for(self, *texts: str, timeout: float = PAINT) -> str:
        """Poll (bounded) until every text is on the screen; the screen then."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if all(t in shown for t in texts):
                return shown
            assert time.monotonic() < deadline, f"never shown: {[t for t in texts if t not in shown]}\n{shown[-3000:]}"
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        """Close the page: its websocket closes, the server stops the viewer's process (which saves its mark)."""
        async with self.http.get(f"http://127.0.0.1:{self.port}/json/close/{self.id}") as response:
            await response.read()
        self.reader.cancel()
        await self.devtools.close()


class Browser:
    """One headless Chromium, its own profile (so its own cookies)."""

    async def __aenter__(self) -> Browser:
        self.profile = tempfile.mkdtemp(prefix="handoff-chromium-")
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--hide-scrollbars", "--enable-unsafe-swiftshader", "--use-gl=angle",
             "--use-angle=swiftshader", "--window-size=1400,900", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"], stderr=subprocess.PIPE, text=True)
        line = ""
        while "DevTools listening on" not in line:
            line = self.process.stderr.readline()
            assert line or self.process.poll() is None, "chromium exited before its DevTools port opened"
        self.port = int(re.search(r"127\.0\.0\.1:(\d+)/", line).group(1))
        self.http = aiohttp.ClientSession()
        return self

    async def open(self, url: str, headers: dict[str, str] | None = None) -> Tab:
        """A new tab on `url`, every request of it (the websocket's too) carrying `headers`, as a proxy would add them."""
        async with self.http.put(f"http://127.0.0.1:{self.port}/json/new?about:blank") as response:
            target = await response.json()
        devtools = await self.http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        tab = Tab(self.http, devtools, target["id"], self.port)
        await tab.call("Network.enable")
        if headers:
            await tab.call("Network.setExtraHTTPHeaders", headers=headers)
        await tab.call("Page.navigate", url=url)
        return tab

    async def __aexit__(self, *exc: Any) -> None:
        await self.http.close()
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


class Served:
    """`handoff-tui serve` on a copy of the Postgres fleet, with a private state folder."""

    def __init__(self, tmp_path: Path, *auth: str) -> None:
        self.folder = tmp_path / "fleet"
        self.folder.mkdir()
        self.ledger = self.folder / "ledger.yaml"
        self.ledger.write_bytes((ROOT / "ledgers" / "pg16-fleet.yaml").read_bytes())
        self.expected = self.ledger.read_bytes()  # what the folder must hold: the test's own last write, nothing else
        self.state = tmp_path / "state"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(self.state), "LANG": "C.UTF-8",
               "HANDOFF_SERVE_SEEN_AFTER": SEEN_AFTER}
        self.process = subprocess.Popen([sys.executable, "-m", "tui.main", "serve", str(self.ledger), "--bind",
                                         f"127.0.0.1:{self.port}", *auth], cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert "read-only observers on" in self.process.stdout.readline()
        assert "share a view as" in self.process.stdout.readline()
        wait_listening(self.port)

    def edit(self, old: str, new: str) -> None:
        """A hand edit of the ledger (the digest compares content, so no engine write is needed)."""
        text = self.ledger.read_text("utf-8")
        assert old in text
        self.ledger.write_text(text.replace(old, new), "utf-8")
        self.expected = self.ledger.read_bytes()

    def marks(self) -> dict[str, dict[str, Any]]:
        """Each viewer's mark by the viewer part of its key."""
        found = {}
        for path in sorted((self.state / "handoff-tui").glob("*.json")):
            data = json.loads(path.read_text("utf-8"))
            found[data["key"].rpartition("#viewer=")[2]] = data
        return found

    async def mark_of(self, who: str, state_of: tuple[str, str] | None = None) -> dict[str, Any]:
        """Wait (bounded) until the mark of a viewer whose label starts `who` exists (and records `state_of`)."""
        deadline = time.monotonic() + PAINT
        while True:
            mark = next((m for k, m in self.marks().items() if k.startswith(who)
                         and (state_of is None or m["targets"].get(state_of[0]) == state_of[1])), None)
            if mark is not None:
                return mark
            assert time.monotonic() < deadline, f"no mark for {who} with {state_of}: {self.marks()}"
            await asyncio.sleep(0.2)

    def viewers(self) -> int:
        """How many viewer processes (`handoff-tui --read-only`) run under the server now."""
        parents: dict[int, int] = {}
        commands: dict[int, bytes] = {}
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    commands[int(proc.name)] = (proc / "cmdline").read_bytes()
                except (OSError, ValueError, IndexError):
                    continue  # ended while we looked

        def under(pid: int) -> bool:
            while pid > 1:
                pid = parents.get(pid, 0)
                if pid == self.process.pid:
                    return True
            return False

        return sum(1 for pid, cmd in commands.items() if b"--read-only" in cmd and b"-c" not in cmd.split(b"\0")[:2]
                   and under(pid))

    async def wait_viewers(self, n: int) -> None:
        """Wait (bounded) until exactly `n` viewer processes run: a closed tab's process has saved its mark and ended."""
        deadline = time.monotonic() + PAINT
        while self.viewers() != n:
            assert time.monotonic() < deadline, f"{self.viewers()} viewer processes, not {n}"
            await asyncio.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def user(name: str) -> dict[str, str]:
    return {"X-Forwarded-User": name}


async def visit(browser: Browser, served: Served, name: str, *shows: str) -> str:
    """One tab of `name`: open, wait for `shows`, wait until it has counted as a look, close. The screen."""
    mine = f"user-{name}-"
    before = {k: m.get("seen_at") for k, m in served.marks().items() if k.startswith(mine)}
    tab = await browser.open(f"{served.base}/", user(name))
    screen = await tab.wait_for("pg14-to-pg16-fleet-upgrade", "db-18", *shows)
    # Open until it has counted as a look (SEEN_AFTER from when its changes were on screen): its mark moved.
    deadline = time.monotonic() + PAINT
    while not any(k.startswith(mine) and m.get("seen_at") != before.get(k) for k, m in served.marks().items()):
        assert time.monotonic() < deadline, f"{name}'s look never counted: {served.marks()}"
        await asyncio.sleep(0.2)
    await tab.close()
    await served.wait_viewers(0)
    return screen


async def test_each_viewer_sees_what_changed_since_their_own_last_look(tmp_path: Path) -> None:
    """alice and bob by the trusted header: three changes, alice looks between them, bob only before."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: tests/run.sh installs Debian's chromium package"
    served = Served(tmp_path, "--trust-header", "X-Forwarded-User")
    try:
        async with Browser() as browser:
            await visit(browser, served, "alice")
            await visit(browser, served, "bob")
            served.edit("db-19: {state: queued}", 'db-19: {state: failed, reason: "lag too high"}')
            seen = await visit(browser, served, "alice", "db-19: queued → failed")
            assert "Since you last looked" in seen

            # Two tabs of alice: the first has counted as a look before the second opens, so the
            # second shows nothing old; a change while both are open; both close; her mark keeps it.
            served.edit("db-21: {state: queued}", "db-21: {state: blocked, reason: PLAT-9}")
            first = await browser.open(f"{served.base}/", user("alice"))
            await first.wait_for("db-21: queued → blocked")
            await served.mark_of("user-", ("db-21", "blocked"))  # the first tab has counted as a look
            second = await browser.open(f"{served.base}/", user("alice"))
            shown = await second.wait_for("pg14-to-pg16-fleet-upgrade", "db-18")
            assert "db-21: queued → blocked" not in shown and "db-19: queued → failed" not in shown
            served.edit("db-22: {state: queued}", "db-22: {state: failed, reason: disk}")
            await first.wait_for("disk")  # both follow the file live
            await second.wait_for("disk")
            await second.close()
            await served.wait_viewers(1)
            await first.close()
            await served.wait_viewers(0)  # the first tab's process saved as it ended; it must not take the mark back
            again = await visit(browser, served, "alice")
            assert not any(f"{n}: queued →" in again for n in ("db-19", "db-21", "db-22")), again

            # bob's one look was before all of it: he sees every change.
            await visit(browser, served, "bob", "db-19: queued → failed", "db-21: queued → blocked", "db-22: queued → failed")
        assert sorted(k.split("-")[0] + "-" + k.split("-")[1] for k in served.marks()) == ["user-alice", "user-bob"]
    finally:
        served.stop()
    assert folder_state(served.folder) == {"ledger.yaml": served.expected}


async def test_a_link_opens_its_target_or_says_why_not(tmp_path: Path) -> None:
    """?target=db-18 opens its detail; bad links say why in one line; without the token the link is refused."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: tests/run.sh installs Debian's chromium package"
    served = Served(tmp_path, "--token", TOKEN)
    before = folder_state(served.folder)
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # unsafe: keeps 127.0.0.1's cookies
            for refused in (f"{served.base}/?target=db-18", f"{served.base}/?target=db-18&token=wrong",
                            f"{served.base}/ws/anything?target=db-18"):
                async with http.get(refused) as response:
                    assert response.status == 401 and "not authenticated" in await response.text(), refused
            async with http.get(f"{served.base}/?token={TOKEN}&target=db-18") as response:
                page = await response.text()
            ticket = re.search(r'data-session-websocket-url="ws://127\.0\.0\.1:\d+/ws/([A-Za-z0-9_-]+)"', page).group(1)
            with pytest.raises(aiohttp.WSServerHandshakeError) as foreign:
                await http.ws_connect(f"{served.base}/ws/{ticket}?token={TOKEN}", headers={"Origin": "http://evil.example"})
            assert foreign.value.status == 403  # the ticket's websocket passes the same Origin check
        async with Browser() as browser:
            tab = await browser.open(f"{served.base}/?token={TOKEN}&target=db-18")
            detail = await tab.wait_for("Target db-18", "Would run next", "0/9A3F2C10")
            assert "Link:" not in detail
            # The address bar to copy from holds the view, never the token (it became a cookie).
            href = (await tab.call("Runtime.evaluate", expression="location.href"))["result"]["value"]
            assert href == f"{served.base}/?target=db-18", href
            await served.mark_of("browser-")  # open until it has counted as a look (the others close at once)
            await tab.close()
            for link, says in (("target=db-99", "Link: no target 'db-99' in this ledger."),
                               ("filter=is:bogus", "Link: filter 'is:bogus' not applied"),
                               ("target=%1B%5B2Jdb-18", "Link: no target '␛[2Jdb-18' in this ledger.")):
                tab = await browser.open(f"{served.base}/?token={TOKEN}&{link}")
                shown = await tab.wait_for(says, "db-18", "db-25")  # the normal screen, the table whole
                assert "Target db-18" not in shown
                await tab.close()
        assert all(k.startswith("browser-") for k in served.marks()) and len(served.marks()) == 1
    finally:
        served.stop()
    assert folder_state(served.folder) == before
