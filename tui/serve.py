"""`handoff-tui serve LEDGER --bind HOST:PORT`: the read-only screen in a browser, for observers.

Built on textual-serve (the `serve` extra): every viewer's browser tab gets its own
`handoff-tui LEDGER --read-only` process, so nothing a viewer types can change the
ledger. In front of it, one aiohttp middleware:
- **authentication**, required: a token (`--token`, or HANDOFF_SERVE_TOKEN), given once as
  `?token=` and then kept in an HttpOnly cookie, and/or a header set by an authenticating
  reverse proxy (`--trust-header X-Forwarded-User`; only behind such a proxy);
- an **Origin check** on the websocket (a page on another site cannot drive a viewer);
- a **cap on viewers** (`--max-viewers`, default 8: each viewer is a process of about 70 MB).
The page is our own copy of textual-serve's template without its Google Fonts link; its
font, script and styles are served from here. Refusals are plain HTTP errors that say why.
"""

from __future__ import annotations

import hmac
import shlex
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from textual_serve.server import Server

TEMPLATES = Path(__file__).resolve().parent / "web"
COOKIE = "handoff_viewer"
MAX_VIEWERS = 8

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ObserverServer(Server):
    """textual-serve's server, always read-only, behind authentication, an Origin check and a viewer cap."""

    def __init__(self, ledger: str, host: str, port: int, *, token: str | None, trust_header: str | None,
                 max_viewers: int = MAX_VIEWERS) -> None:
        if not token and not trust_header:
            raise ValueError("serve needs --token (or HANDOFF_SERVE_TOKEN) or --trust-header: an observer page is never open to all")
        # A shell line (textual-serve starts it with a shell): every word quoted, the mode fixed.
        command = shlex.join([sys.executable, "-m", "tui.main", ledger, "--read-only"])
        super().__init__(command, host=host, port=port, title="handoff-tui (read-only)", templates_path=TEMPLATES)
        self.token = token
        self.trust_header = trust_header
        self.max_viewers = max_viewers
        self.viewers = 0

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    def _authenticated(self, request: web.Request) -> tuple[bool, bool]:
        """(allowed, the token came in the query and should become a cookie)."""
        if self.trust_header and request.headers.get(self.trust_header, "").strip():
            return True, False
        if self.token:
            given = request.query.get("token")
            if given is not None and hmac.compare_digest(given, self.token):
                return True, True
            cookie = request.cookies.get(COOKIE)
            if cookie is not None and hmac.compare_digest(cookie, self.token):
                return True, False
        return False, False

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        allowed, set_cookie = self._authenticated(request)
        if not allowed:
            how = " or ".join(w for w in ("?token=TOKEN" if self.token else "",
                                           f"the {self.trust_header} header" if self.trust_header else "") if w)
            raise web.HTTPUnauthorized(text=f"handoff-tui serve: not authenticated; open the page with {how}\n")
        if request.path == "/ws":
            origin = request.headers.get("Origin", "")
            if origin != self.public_url:
                raise web.HTTPForbidden(text=f"handoff-tui serve: websocket from origin {origin or '(none)'!r} refused; "
                                             f"only {self.public_url} may connect\n")
            if self.viewers >= self.max_viewers:
                raise web.HTTPServiceUnavailable(text=f"handoff-tui serve: {self.max_viewers} viewers already; "
                                                      "close a tab or start the server with a larger --max-viewers\n")
        response = await handler(request)
        if set_cookie and self.token:
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        self.viewers += 1  # counted for the life of the viewer's process
        try:
            return await super().handle_websocket(request)
        finally:
            self.viewers -= 1

    async def on_startup(self, app: Any) -> None:
        print(f"handoff-tui serve: read-only observers on {self.public_url}/ (max {self.max_viewers} viewers)", flush=True)

    def initialize_logging(self) -> None:
        """textual-serve's rich logging is not ours to print; errors still reach stderr."""
