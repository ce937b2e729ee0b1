"""Who a `handoff-tui serve` viewer is, and what their page's URL asked to open.

The server (`tui.serve`) learns both from the HTTP request and hands them to that
viewer's own `handoff-tui --read-only` process in two environment variables (never on
the shell line textual-serve runs): `HANDOFF_SERVE_VIEWER`, the viewer's *label*, and
`HANDOFF_SERVE_VIEW`, the link's target and filter as ASCII-only JSON. Both are data:

- a label is made here from the raw identity (a trusted header's value, or the id of the
  browser's cookie) and holds only `[A-Za-z0-9._@-]` plus a digest of the raw value, so
  `../x`, a newline or an escape sequence can reach neither a file name nor a screen, and
  two raw values never share a label; the state file is then named by a hash of it;
- the link's values stay text: the app shows them through `tui.text` (escapes made
  visible), and the filter only ever becomes the table's filter, never markup.

The app side (`from_environ`) is imported by `tui.main` with no aiohttp in sight.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

VIEWER_ENV = "HANDOFF_SERVE_VIEWER"
VIEW_ENV = "HANDOFF_SERVE_VIEW"
ANONYMOUS = "-"  # served, but nobody we can tell apart (a token and no browser cookie): no mark kept
MAX_LINK_VALUE = 200  # characters of a ?target= or ?filter= kept; a longer one is cut (and said so)
_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]+")
_LABEL = re.compile(r"[A-Za-z0-9._@-]{1,80}")


def viewer_label(kind: str, raw: str) -> str:
    """A file-name- and screen-safe label for one viewer: `user-alice-1f2e...` for a trusted
    header's `alice`, `browser-<id>-...` for a token viewer's cookie. Deterministic (the same
    viewer gets the same mark every visit) and injective in practice (the digest is of `raw`)."""
    readable = _UNSAFE.sub("_", raw)[:40].strip("._") or "_"
    digest = hashlib.sha256(f"{kind}\0{raw}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{kind}-{readable}-{digest}"


def valid_label(value: str | None) -> bool:
    """Whether `value` (from the environment) is a label `viewer_label` could have made."""
    return value is not None and value != ANONYMOUS and _LABEL.fullmatch(value) is not None


@dataclass(frozen=True)
class ServedView:
    """What a served viewer's process knows: whose mark, and what the link asked for."""

    viewer: str | None  # a label; None: nobody to keep a mark for
    target: str | None = None
    filter: str | None = None

    def environ(self) -> dict[str, str]:
        """The two variables for this viewer's process (JSON with ensure_ascii: no control byte survives)."""
        link = {k: v for k, v in (("target", self.target), ("filter", self.filter)) if v}
        return {VIEWER_ENV: self.viewer if self.viewer is not None else ANONYMOUS,
                VIEW_ENV: json.dumps(link, ensure_ascii=True)}


def link_value(value: str | None) -> str | None:
    """A ?target= / ?filter= value as kept: None when empty, at most MAX_LINK_VALUE characters."""
    if value is None or not value.strip():
        return None
    return value[:MAX_LINK_VALUE]


def from_environ(environ: Mapping[str, str]) -> ServedView | None:
    """The served view this process was started for; None when it was not started by serve."""
    label = environ.get(VIEWER_ENV)
    if label is None:
        return None
    try:
        link = json.loads(environ.get(VIEW_ENV) or "{}")
    except ValueError:
        link = {}
    if not isinstance(link, dict):
        link = {}

    def text(name: str) -> str | None:
        value = link.get(name)
        return link_value(value) if isinstance(value, str) else None

    return ServedView(label if valid_label(label) else None, text("target"), text("filter"))
