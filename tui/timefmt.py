"""Ledger timestamps: parse them leniently and say how long ago, for humans.

The ledger writes ISO 8601 in UTC (`2026-11-29T02:11:04Z`); a hand-written one
may drop the seconds (`2026-09-09T14:00Z`, as in the article). Anything else is
shown as written, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from engine.api import age_text, parse_time

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The default clock: now, in UTC."""
    return datetime.now(UTC)


def parse_ts(value: str | None) -> datetime | None:
    """An aware datetime from an ISO timestamp, or None when it is not one (the engine's parser)."""
    return parse_time(value)


def ago(seconds: float | None) -> str:
    """`42s`, `5m`, `3h`, `2d`: short ages for narrow columns; '' when unknown."""
    return "" if seconds is None else age_text(seconds)



def age_of(value: str | None, now: datetime) -> str:
    """How long ago timestamp `value` was, relative to `now`."""
    parsed = parse_ts(value)
    if parsed is None:
        return ""
    return ago((now - parsed).total_seconds())


def short_time(value: str | None) -> str:
    """`2026-11-29 02:11Z` from an ISO timestamp, or the text as written."""
    parsed = parse_ts(value)
    if parsed is None:
        return str(value or "")
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")
