"""Time as the ledger writes it: UTC ISO-8601 with a Z, and parsing what humans write."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now_iso(at: float | None = None) -> str:
    """`2026-09-10T01:52:07Z` for now (or for the epoch time `at`)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if at is None else at))


def parse_time(text: str | None) -> datetime | None:
    """An aware UTC datetime for an ISO time like `2026-09-09T14:00Z` (seconds optional,
    no zone meaning UTC), or None for anything else. The one time parser."""
    if not text:
        return None
    value = str(text).strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)  # the engine writes UTC
    return stamp


def parse_iso(text: str | None) -> float | None:
    """Epoch seconds for an ISO time (see parse_time), or None."""
    stamp = parse_time(text)
    return None if stamp is None else stamp.timestamp()


def age_text(seconds: float | None) -> str:
    """`42s`, `5m`, `3h`, `2d` — how long ago, for people (narrow columns too)."""
    if seconds is None:
        return "never"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h"
    return f"{int(seconds // 86400)}d"
