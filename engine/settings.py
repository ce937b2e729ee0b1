"""Durations an operator (or a test) sets through the environment, read one way.

HANDOFF_LEASE_STALE_AFTER (engine.lease.rules), HANDOFF_LOCK_TIMEOUT (engine.store.filelock),
HANDOFF_DB_OUTAGE_SECONDS (engine.store.pg_conn): a number of seconds; anything else
(unset, not a number, out of range) means the default.
"""

from __future__ import annotations

import os


def seconds(name: str, default: float, *, allow_zero: bool = False) -> float:
    """The seconds `name` says, or `default` when it says nothing usable."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    if value != value or value < 0 or (value == 0 and not allow_zero):  # NaN, negative, or a zero that means nothing
        return default
    return value
