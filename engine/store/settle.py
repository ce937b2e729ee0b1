"""A ledger read while someone saves it in place.

Many editors and scripts save by truncating the file and writing it again (nano, `>`,
Python's `write_text`): a read in between sees an empty or half-written file. A session
that took that for the ledger ended with "the ledger must be a mapping" though the person's
save was whole a moment later. A read that does not parse is read again after a short
pause while the bytes keep changing; bytes that stay as they were are reported at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from engine.errors import LedgerInvalid

T = TypeVar("T")

PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8)  # seconds: a save still changing after 1.55 s is reported as it is


def pause(seconds: float) -> None:
    time.sleep(seconds)


def settled(raw: bytes, parse: Callable[[bytes], T], read: Callable[[], bytes]) -> tuple[bytes, T]:
    """(the bytes that parsed, what `parse` made of them). Where `raw` does not parse, `read()`
    again after each pause: new bytes are parsed in their turn; the same bytes again, or the
    pauses run out, raise the last error (the file is as it was saved)."""
    try:
        return raw, parse(raw)
    except LedgerInvalid as err:
        last = err
    for seconds in PAUSES:
        pause(seconds)
        now = read()
        if now == raw:
            break
        raw = now
        try:
            return raw, parse(raw)
        except LedgerInvalid as err:
            last = err
    raise last
