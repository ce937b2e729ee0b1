"""`handoff-tui serve LEDGER --bind HOST:PORT`: the read-only screen in a browser, for observers.

Built on textual-serve (the `serve` extra): every viewer's browser tab gets its own
`handoff-tui LEDGER --read-only` process, so nothing a viewer types can change the
ledger. In front of it, one aiohttp middleware:
- **authentication**, required: a token (HANDOFF_SERVE_TOKEN, `--token-file`, or `--token`, which
  every local user can read in `ps`), given once as
  `?token=` and then kept in an HttpOnly cookie (the page redirects to its URL without the
  token, so a link copied from the address bar never carries it), and/or a header set by an
  authenticating reverse proxy (`--trust-header X-Forwarded-User`; only behind such a proxy);
- an **Origin check** on the websocket (a page on another site cannot drive a viewer): the page's
  Origin is the public URL, the one browsers reach (`--public-url`, behind a proxy), else
  http://HOST:PORT of `--bind`; the page sends its websocket there too;
- a **cap on viewers** (`--max-viewers`, default 8: each viewer is a process of about 70 MB).
The page is our own copy of textual-serve's template without its Google Fonts link; its
font, script and styles are served from here. Refusals are plain HTTP errors that say why.
SIGTERM, Ctrl+C and a hang-up (unless `nohup` ignores it) stop the server within seconds:
every page's websocket is closed and every viewer's process told to quit. A viewer whose
server is gone all the same (SIGKILL) quits on its own (tui.endings).

Per viewer (`tui.viewer`): each viewer's process gets, in its environment, *who* the viewer
is (the trusted header's user, or with a token the random id of an HttpOnly cookie this
server gives each browser), so "since you last looked" is kept per viewer; and *what the
page's URL asked for* (`?target=NAME`, `?filter=TEXT`). textual-serve's page opens its
websocket at a fixed URL without the page's query, so the page's URL is turned into a
one-use ticket (`/ws/TICKET`) when the page is served; that viewer's websocket redeems it. Both
requests pass the same authentication (and the websocket the Origin check).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import secrets
import shlex
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from engine.api import hangups_ignored
from tui.viewer import ServedView, link_value, viewer_label

TEMPLATES = Path(__file__).resolve().parent / "web"
COOKIE = "handoff_viewer"  # holds the token (the name predates per-browser ids)
BROWSER_COOKIE = "handoff_browser"  # a random id per browser: a token viewer's identity
BROWSER_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
BROWSER_COOKIE_AGE = 400 * 24 * 3600  # the longest a browser keeps a cookie: the same viewer next month
MAX_VIEWERS = 8
STOP_GRACE = 5.0  # seconds a viewer's process has to quit when told to; then it is killed
TICKET_TTL = 120.0  # seconds a page's ticket waits for its websocket
MAX_TICKETS = 256  # tickets waiting at once; the oldest go first (an authenticated page-reloader cannot grow memory)
log = logging.getLogger("handoff-tui.serve")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ObserverServer(Server):
    """textual-serve's server, always read-only, behind authentication, an Origin check and a viewer cap."""

    def __init__(self, ledger: str, host: str, port: int, *, token: str | None, trust_header: str | None,
                 max_viewers: int = MAX_VIEWERS, public_url: str | None = None) -> None:
        if not token and not trust_header:
            raise ValueError("serve needs --token-file (or HANDOFF_SERVE_TOKEN) or --trust-header: an observer page is never open to all")
        # A shell line (textual-serve starts it with a shell): every word quoted, the mode fixed; `exec`, so
        # the process the server holds is the viewer itself (ViewerService.stop kills that one when it hangs).
        command = "exec " + shlex.join([sys.executable, "-m", "tui.main", ledger, "--read-only"])
        super().__init__(command, host=host, port=port, title="handoff-tui (read-only)", templates_path=TEMPLATES,
                         public_url=public_url)
        self.origin = origin_of(self.public_url)
        self.token = token
        self.trust_header = trust_header
        self.max_viewers = max_viewers
        self.viewers = 0
        self.sockets: set[web.WebSocketResponse] = set()  # the open pages, closed when the server stops
        # ticket -> (expires, viewer, target, filter): redeemed once, by the viewer the page was served to
        self.tickets: dict[str, tuple[float, str | None, str | None, str | None]] = {}

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.router.add_get("/ws/{ticket}", self.handle_websocket, name="websocket-view")
        app.middlewares.append(self._guard)
        return app

    def viewer_of(self, request: web.Request) -> str | None:
        """The viewer's label (see `tui.viewer`): the trusted header's user, else the browser's id; None if neither."""
        if self.trust_header:
            user = request.headers.get(self.trust_header, "").strip()
            if user:
                return viewer_label("user", user)
        browser = request.get(BROWSER_COOKIE) or request.cookies.get(BROWSER_COOKIE, "")
        if self.token and BROWSER_ID.fullmatch(browser):
            return viewer_label("browser", browser)
        return None

    def _issue_ticket(self, request: web.Request) -> str:
        """A one-use ticket carrying the page's ?target= and ?filter= to its websocket."""
        now = time.monotonic()
        for old in [t for t, held in self.tickets.items() if held[0] < now]:
            del self.tickets[old]
        while len(self.tickets) >= MAX_TICKETS:
            del self.tickets[next(iter(self.tickets))]
        ticket = secrets.token_urlsafe(18)
        self.tickets[ticket] = (now + TICKET_TTL, self.viewer_of(request), link_value(request.query.get("target")),
                                link_value(request.query.get("filter")))
        return ticket

    def view_for(self, request: web.Request) -> ServedView:
        """Whose process this websocket starts, and what its page's URL asked for."""
        target = filter_ = None
        viewer = self.viewer_of(request)
        held = self.tickets.pop(request.match_info.get("ticket", ""), None)
        if held is not None and held[0] >= time.monotonic() and held[1] == viewer:
            _, _, target, filter_ = held
        return ServedView(viewer, target, filter_)

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """textual-serve's page, its websocket URL carrying this page's ticket."""
        context: dict[str, Any] = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]
        context["app_websocket_url"] = f"{context['app_websocket_url']}/{self._issue_ticket(request)}"
        return context

    def _authenticated(self, request: web.Request) -> tuple[bool, bool]:
        """(allowed, the token came in the query and should become a cookie). With a token, the token
        is required: the trusted header then only names the viewer (a peer that reaches the port
        without the proxy could type the header by hand). Compared as UTF-8 bytes: a wrong token in
        any script is a wrong token, never a server error."""
        if self.token:
            given = request.query.get("token")
            if given is not None and hmac.compare_digest(_utf8(given), _utf8(self.token)):
                return True, True
            cookie = request.cookies.get(COOKIE)
            if cookie is not None and hmac.compare_digest(_utf8(cookie), self._cookie_value().encode()):
                return True, False
            return False, False
        if self.trust_header and request.headers.get(self.trust_header, "").strip():
            return True, False
        return False, False

    def _cookie_value(self) -> str:
        """What the sign-in cookie holds: an HMAC of the token, never the token (a cookie goes to
        every port of the host name, and a service there may log it)."""
        return hmac.new(_utf8(self.token or ""), b"handoff-tui serve: signed-in browser", "sha256").hexdigest()

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        allowed, set_cookie = self._authenticated(request)
        if not allowed:
            how = " or ".join(w for w in ("?token=TOKEN" if self.token else "",
                                           f"the {self.trust_header} header" if self.trust_header else "") if w)
            raise web.HTTPUnauthorized(text=f"handoff-tui serve: not authenticated; open the page with {how}\n")
        if request.path == "/ws" or request.path.startswith("/ws/"):
            origin = request.headers.get("Origin", "")
            if origin.lower() != self.origin:
                raise web.HTTPForbidden(text=f"handoff-tui serve: websocket from origin {origin or '(none)'!r} refused; "
                                             f"only {self.origin} may connect (behind a proxy: --public-url)\n")
            if self.viewers >= self.max_viewers:
                raise web.HTTPServiceUnavailable(text=f"handoff-tui serve: {self.max_viewers} viewers already; "
                                                      "close a tab or start the server with a larger --max-viewers\n")
        if self.token and request.path == "/" and not BROWSER_ID.fullmatch(request.cookies.get(BROWSER_COOKIE, "")):
            request[BROWSER_COOKIE] = secrets.token_urlsafe(18)  # this page's ticket is already this browser's
        if "token" in request.query and request.path == "/" and request.method in ("GET", "HEAD"):
            # The token has become a cookie (or the proxy's header let the page in): the address
            # bar loses it, so a link copied from it (to share a target's view) never carries
            # the token to a chat or a ticket.
            response: web.StreamResponse = web.Response(status=303, headers={"Location": str(
                request.rel_url.without_query_params("token"))}, text="handoff-tui serve: signed in\n")
        else:
            response = await handler(request)
        if set_cookie and self.token:
            response.set_cookie(COOKIE, self._cookie_value(), httponly=True, samesite="Strict")
        if BROWSER_COOKIE in request:
            response.set_cookie(BROWSER_COOKIE, request[BROWSER_COOKIE], httponly=True, samesite="Strict",
                                max_age=BROWSER_COOKIE_AGE)
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's websocket handler (1.1.x), the process started with this viewer's environment."""
        self.viewers += 1  # counted for the life of the viewer's process
        websocket = web.WebSocketResponse(heartbeat=15)
        width, height = _size(_number(request.query.get("width"), 80), _number(request.query.get("height"), 24))
        service: ViewerService | None = None
        try:
            view = self.view_for(request)
            await websocket.prepare(request)
            self.sockets.add(websocket)
            service = ViewerService(self.command, view.environ(), write_bytes=websocket.send_bytes,
                                    write_str=websocket.send_str, close=websocket.close,
                                    download_manager=self.download_manager, debug=self.debug)
            await service.start(width, height)
            try:
                await self._process_messages(websocket, service)
            finally:
                await service.stop()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # noqa: BLE001 - one viewer's failure must not end the server; logged, as upstream does
            log.exception(error)
        finally:
            if service is not None:
                await service.stop()
            self.sockets.discard(websocket)
            self.viewers -= 1
        return websocket

    async def on_shutdown(self, app: web.Application) -> None:
        """Stopping: close every page's websocket. Each handler then stops its viewer's process
        (as when its tab closes: its mark is saved) and returns; an open page would otherwise hold the server up
        for aiohttp's whole shutdown timeout (60 s) before it is cancelled."""
        await asyncio.gather(*(socket.close(code=WSCloseCode.GOING_AWAY, message=b"the server is stopping")
                               for socket in list(self.sockets)), return_exceptions=True)

    async def on_startup(self, app: Any) -> None:
        if not hangups_ignored():  # under nohup a hang-up ends nothing
            # The SSH session that started the server ended: stop as SIGTERM stops it (every viewer's
            # process told to quit), never die leaving the viewers running unserved.
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.request_exit)
        print(f"handoff-tui serve: read-only observers on {self.public_url}/ (max {self.max_viewers} viewers)", flush=True)
        print(f"handoff-tui serve: share a view as {self.public_url}/?target=NAME or {self.public_url}/?filter=TEXT "
              "(viewers still need the token or the trusted header)", flush=True)

    def initialize_logging(self) -> None:
        """textual-serve's rich logging is not ours to print; errors still reach stderr."""


def _utf8(text: str) -> bytes:
    """A header's or query's text as bytes: aiohttp keeps a byte that is not UTF-8 as a lone
    surrogate, which no plain `encode()` takes; kept as that byte, it is just a wrong value."""
    return text.encode("utf-8", "surrogateescape")


def public_url_problem(url: str) -> str | None:
    """Why `url` cannot be the address browsers reach the server at (None if it can): it must be
    http(s)://HOST[:PORT][/PATH], no user, query or fragment."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is no number
    except ValueError as error:
        return str(error)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "give http(s)://HOST[:PORT], the address browsers open (the proxy's)"
    if parts.username is not None or parts.query or parts.fragment or "?" in url or "#" in url:
        return "no user, query or fragment: only http(s)://HOST[:PORT][/PATH]"
    return None


def origin_of(url: str) -> str:
    """The Origin a browser sends for a page at `url`: scheme://host[:port], lower case, no default port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # `--bind ::1:8080` made `http://::1:8080`: compared as it is
        return url.lower()
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    shown = "" if port is None or port == {"http": 80, "https": 443}.get(parts.scheme) else f":{port}"
    return f"{parts.scheme}://{host}{shown}".lower()


def _number(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


# The biggest screen a viewer gets (a 4K display at a small font is about 400 x 120): a viewer's
# process draws, and holds, what its page asks for, and `--max-viewers` counts on each staying small.
MAX_COLUMNS, MAX_ROWS = 500, 200


def _size(width: Any, height: Any) -> tuple[int, int]:
    """(columns, rows) as asked, within 1 .. MAX_COLUMNS and 1 .. MAX_ROWS (80 x 24 for what is no number)."""
    width = width if isinstance(width, int) and not isinstance(width, bool) else 80
    height = height if isinstance(height, int) and not isinstance(height, bool) else 24
    return min(max(width, 1), MAX_COLUMNS), min(max(height, 1), MAX_ROWS)


class ViewerService(AppService):
    """One viewer's process: textual-serve's environment plus who the viewer is and what the link asked for."""

    def __init__(self, command: str, viewer_environ: dict[str, str], **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self.viewer_environ = viewer_environ

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        return {**super()._build_environment(width=width, height=height), **self.viewer_environ}

    async def set_terminal_size(self, width: int, height: int) -> None:
        """A page's resize, within MAX_COLUMNS x MAX_ROWS."""
        await super().set_terminal_size(*_size(width, height))

    async def stop(self) -> None:
        """textual-serve's stop (the viewer told to quit, then its output read to the end),
        bounded: a viewer that has not quit within STOP_GRACE (hung, or stopped) is killed, so
        neither a closing page nor the server's own stop waits on it for ever."""
        timer = asyncio.get_running_loop().call_later(STOP_GRACE, _kill, self._process)
        try:
            await super().stop()
        finally:
            timer.cancel()


def _kill(process: asyncio.subprocess.Process | None) -> None:
    if process is not None and process.returncode is None:
        try:
            process.kill()
        except ProcessLookupError:
            pass  # it ended in the meantime
