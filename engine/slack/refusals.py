"""How often a refused request is written down: a flood of forged requests (anyone who can reach
the HTTP port can send them) must not grow a ledger's journal, or the terminal's log, without bound.

The first refusal for a ledger is journaled and said at once; those within the next minute are
only counted, and the count is journaled when the minute is over (the worker looks every poll)
or when the process ends. Requests that name no ledger are counted the same way for stderr.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

EVERY = 60.0  # seconds: at most one refusal record per ledger this often, plus one with the count


class Refusals:
    """Per key (a watched ledger's, or "" for requests naming none): when the last record was
    written and how many refusals were only counted since."""

    def __init__(self, every: float = EVERY, clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self.clock = every, clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, key: str) -> bool:
        """True: write this refusal down now. False: it is counted, to be written with the rest."""
        with self._lock:
            now = self.clock()
            last = self._last.get(key)
            if last is not None and now - last < self.every:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            return True

    def due(self, *, all_of_them: bool = False) -> list[tuple[str, int]]:
        """(key, count) of the refusals only counted whose minute is over (every one: the process ends)."""
        with self._lock:
            now = self.clock()
            out = [(k, n) for k, n in self._held.items() if n and (all_of_them or now - self._last.get(k, 0.0) >= self.every)]
            for key, _n in out:
                self._held[key] = 0
                self._last[key] = now
            return out
