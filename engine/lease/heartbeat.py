"""A holder's heartbeat beside a file ledger: what it says, the `<ledger>.heartbeat`
sidecar that holds it, and the filesystem's own clock its age is read on.

Apart from engine.lease.rules (who is live, dead or stale; the beating thread): a Claude
Code hook writes a heartbeat on every tool call and needs none of those rules.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any

from engine.approvals.identity import hostname
from engine.store.atomic import atomic_write
from engine.store.sidecar import SidecarRefused, open_sidecar


def beat_record(holder: str, **state: Any) -> dict[str, Any]:
    """A heartbeat's content: the holder id plus what it says it is doing. `at` is the
    writer's clock, for people only: staleness is judged on the store's clock."""
    return {"session": holder, "pid": os.getpid(), "host": hostname(), "at": time.time(), **state}


class Heartbeat:
    """The `<ledger>.heartbeat` sidecar of a file ledger."""

    def __init__(self, path: str, ledger: str) -> None:
        self.path = path
        self.ledger = ledger

    def write(self, holder: str, **state: Any) -> None:
        """Replace the heartbeat atomically (never through a symlink; readable by whoever
        can read the ledger). Not fsynced: a lost beat costs nothing. Raises OSError."""
        body = json.dumps(beat_record(holder, **state)).encode("utf-8")
        atomic_write(self.path, body, durable=False, sidecar_of=self.ledger)

    def remove(self) -> None:
        """Delete the heartbeat (a released lease leaves none)."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass  # already gone is the goal

    def current(self) -> dict[str, Any] | None:
        """The heartbeat with its `age` on this filesystem's clock, or None if missing,
        unreadable, torn or a symlink (no proof of life)."""
        try:
            fd = open_sidecar(self.path, os.O_RDONLY, ledger=self.ledger)
        except SidecarRefused:  # missing, a symlink, a folder: all mean "no proof of life"
            return None
        try:
            with os.fdopen(fd, "rb") as fh:
                mtime = os.fstat(fh.fileno()).st_mtime
                data = json.loads(fh.read())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("session"), str):
            return None
        data["age"] = max(0.0, filesystem_now(os.path.dirname(self.path)) - mtime)
        return data


def filesystem_now(folder: str) -> float:
    """Now on the clock that stamps files in `folder` (the mtime of a probe file written
    and removed there); this host's clock when the folder cannot be written."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".handoff-clock.", dir=folder or ".")
    except OSError:
        return time.time()
    try:
        return os.fstat(fd).st_mtime
    finally:
        os.close(fd)
        os.unlink(probe)
