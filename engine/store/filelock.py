"""The writers' lock of a file ledger: a `flock` on `<ledger>.lock`, with a bounded wait.

Whoever takes the lock writes who they are into the lock file (pid, host, command,
since), so a writer that waits too long can say who holds it. A wait ends after
`lock_timeout()` seconds (HANDOFF_LOCK_TIMEOUT, default 10) with `LockTimeout` naming
the holder, unless the caller asked to keep waiting (a running session does, and says
so in its heartbeat). flock is released by the kernel when the holder dies, so a
record left by a dead holder is only ever read while someone else holds the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from engine.approvals.identity import hostname
from engine.codec.timefmt import now_iso
from engine.errors import HandoffError
from engine.host.flock import take_within
from engine.settings import seconds
from engine.store.sidecar import open_sidecar


class LockTimeout(HandoffError):
    """Another writer has held the ledger's lock longer than we wait."""

    title = "Ledger locked"
    exit_code = 1


def lock_timeout() -> float:
    """Seconds a writer waits for the lock (HANDOFF_LOCK_TIMEOUT)."""
    return seconds("HANDOFF_LOCK_TIMEOUT")


def describe(holder: dict | None) -> str:
    """`pid 4242 on bastion-1 (handoff pause ...) since 2026-...` from a lock record."""
    if not holder:
        return "an unknown process (it wrote no record)"
    text = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
    if holder.get("command"):
        text += f" ({holder['command']})"
    if holder.get("since"):
        text += f" since {holder['since']}"
    return text


class FileLock:
    """The lock beside one ledger. Re-entrant within a thread (a transaction inside a
    held lock takes it again)."""

    def __init__(self, path: str, ledger: str) -> None:
        self.path = path
        self.ledger = ledger
        self.on_wait: Callable[[str], bool] | None = None  # holder text -> keep waiting?
        self._held = threading.local()

    def holder(self) -> dict | None:
        """Who holds (or last held) the lock, from its record."""
        try:
            with open(self.path, "rb") as fh:
                data = json.loads(fh.read() or b"null")
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @contextmanager
    def hold(self) -> Iterator[int]:
        """Hold the lock (waiting as the module says); yields its file descriptor."""
        fd = getattr(self._held, "fd", None)
        if fd is not None:
            yield fd
            return
        fd = open_sidecar(self.path, os.O_RDWR | os.O_CREAT, ledger=self.ledger)
        try:
            self._wait(fd)
            self._held.fd = fd
            self._write_holder(fd)
            yield fd
        finally:
            self._held.fd = None
            os.close(fd)  # closing releases the flock

    def holds(self) -> bool:
        """Does this thread hold the lock now?"""
        return getattr(self._held, "fd", None) is not None

    @contextmanager
    def shared(self) -> Iterator[bool]:
        """A shared hold for a reader that needs the ledger and the record of its last
        write to be one consistent pair (writers hold the lock while they write both).
        Yields False, and holds nothing, when there is no lock file (nobody ever wrote)
        or a writer keeps it past the timeout: the reader then goes on without it."""
        try:
            fd = open_sidecar(self.path, os.O_RDONLY, ledger=self.ledger)
        except HandoffError:
            yield False
            return
        try:
            yield take_within(fd, fcntl.LOCK_SH, lock_timeout())
        finally:
            os.close(fd)

    def _wait(self, fd: int) -> None:
        while not take_within(fd, fcntl.LOCK_EX, lock_timeout()):
            who = describe(self.holder())
            if self.on_wait is None or not self.on_wait(who):
                raise LockTimeout(
                    f"the ledger's lock ({self.path}) has been held for more than {lock_timeout():g}s by {who}; "
                    "nothing was changed. If that process is stuck, end it; then try again"
                )

    def _write_holder(self, fd: int) -> None:
        command = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:]])[:200]
        body = json.dumps({"pid": os.getpid(), "host": hostname(), "command": command,
                           "since": now_iso()}).encode("utf-8")
        try:
            os.pwrite(fd, body, 0)
            os.ftruncate(fd, len(body))
        except OSError:
            pass  # the record only helps a waiter name us; the lock itself is held
