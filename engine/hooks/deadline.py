"""The pre-tool-use hook's own deadline: at Claude Code's timeout a hook is killed and the tool
call runs as if the hook had no objection, so the hook answers first, by refusing
(engine.hooks.protocol.run catches TooSlow)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


class TooSlow(BaseException):
    """The hook's own deadline passed (a BaseException: no handler inside the judge swallows it)."""


AGAIN = 0.05  # seconds: a TooSlow swallowed where Python ignores exceptions is raised again this soon


def _too_slow(signum: int, frame: Any) -> None:
    # Raised inside a gc callback, a __del__ or a weakref callback, the exception is printed and
    # dropped ("Exception ignored in"): armed again, the next one lands where it ends the judging.
    signal.setitimer(signal.ITIMER_REAL, AGAIN)
    raise TooSlow


@contextlib.contextmanager
def deadline(event: str) -> Iterator[None]:
    """Judging inside this block takes at most two thirds of Claude Code's timeout for `event`:
    at the timeout Claude Code kills the hook and runs the call unjudged, so past that the hook
    answers by itself, failing closed (engine.hooks.protocol.run catches TooSlow). Only around work that reads: an
    exception arriving there interrupts no write of the ledger or its journal."""
    from engine.hooks import TIMEOUTS

    previous = signal.signal(signal.SIGALRM, _too_slow)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUTS[event] * 2 / 3)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
