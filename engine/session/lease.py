"""The session lease's pure parts: the heartbeat sidecar and the staleness rules.

The lease itself (id, host, pid, start) lives in the ledger's `session` field and is
written through the store by the session loop. Proof of life is separate: a tiny JSON
file `<ledger>.heartbeat` beside the ledger, rewritten every couple of seconds, so the
ledger is not rewritten (and its watchers woken) every few seconds. The heartbeat is
advisory: it is replaced atomically but not fsynced, and a torn or missing one just
means "no proof of life".
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Literal

from engine.model import SessionLease
from engine.session.runner import pid_alive

LeaseStatus = Literal["none", "live", "dead", "stale"]
STALE_AFTER = 180.0


def heartbeat_path(ledger_path: str) -> str:
    """Where the heartbeat of the session driving `ledger_path` lives: beside it."""
    return f"{ledger_path}.heartbeat"


def new_session_id() -> str:
    """A short unique session id that sorts by start time: `<epoch hex>-<random hex>`."""
    return f"{int(time.time()):08x}-{secrets.token_hex(3)}"


class Heartbeat:
    """Writes and reads one heartbeat sidecar file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(
        self,
        session_id: str,
        *,
        budget_used: float | None,
        phase: str,
        detail: str = "",
        **extra: Any,
    ) -> None:
        """Replace the file with `{session, pid, host, at, budget_used, phase, detail}` and
        any `extra` fields (the planner, its tokens used of the budget, its cost so far).

        Atomic (a temp file in the same folder, then os.replace) so a reader never sees
        half a file; not fsynced, because a lost heartbeat costs nothing. Raises OSError.
        """
        record = {
            "session": session_id,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "at": time.time(),
            "budget_used": budget_used,
            "phase": phase,
            "detail": detail,
            **extra,
        }
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(self.path)}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass  # already renamed or never created: nothing to clean up
            raise

    def remove(self) -> None:
        """Delete the file (a session that released its lease leaves no heartbeat)."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass  # already gone is the goal

    def current(self) -> dict[str, Any] | None:
        """This heartbeat's record now, or None (see `read`)."""
        return Heartbeat.read(self.path)

    @staticmethod
    def read(path: str) -> dict[str, Any] | None:
        """The heartbeat at `path`, or None if it is missing, unreadable or torn."""
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            # ValueError covers bad JSON and bad UTF-8. Whatever the reason, a heartbeat
            # we cannot read is no proof of life, which is exactly what None says.
            return None
        if not isinstance(data, dict) or not isinstance(data.get("session"), str):
            return None
        at = data.get("at")
        if isinstance(at, bool) or not isinstance(at, (int, float)):
            return None
        return data


class HeartbeatThread(threading.Thread):
    """A daemon thread that rewrites the heartbeat every `interval` seconds until stop().

    `state_fn()` returns the keyword arguments for Heartbeat.write (`budget_used`,
    `phase`, `detail`); it is called from this thread, so it should only read simple
    attributes. A failing write or state_fn does not kill the thread: the error is kept
    in `last_error` (the session can journal it) and the next beat tries again.
    """

    def __init__(
        self,
        path: "str | Any",
        session_id: str,
        interval: float = 2.0,
        state_fn: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(name=f"heartbeat-{session_id}", daemon=True)
        # A path (the file store's sidecar) or any object with the same write() (the
        # PostgreSQL store keeps its heartbeat in a table).
        self.heartbeat = Heartbeat(path) if isinstance(path, str) else path
        self.session_id = session_id
        self.interval = interval
        self.state_fn = state_fn
        self.last_error: BaseException | None = None
        self.beats = 0
        self._stop_event = threading.Event()
        self._state: dict[str, Any] = {"budget_used": None, "phase": "running", "detail": ""}

    def run(self) -> None:
        while True:
            self.beat()
            if self._stop_event.wait(self.interval):
                return

    def beat(self) -> None:
        """Write one heartbeat now (also called by run() every interval)."""
        if self.state_fn is not None:
            try:
                self._state = {**self._state, **self.state_fn()}
            except Exception as error:  # noqa: BLE001 - kept in last_error, beat goes on
                # Liveness matters more than detail: beat with the last known state.
                self.last_error = error
        try:
            self.heartbeat.write(
                self.session_id,
                budget_used=self._state.get("budget_used"),
                phase=str(self._state.get("phase", "running")),
                detail=str(self._state.get("detail", "")),
                **{k: v for k, v in self._state.items() if k not in ("budget_used", "phase", "detail")},
            )
            self.beats += 1
        except OSError as error:
            self.last_error = error

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop beating and wait for the thread to end."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout)


@dataclass
class LeaseState:
    """What a session about to start should think of the current lease."""

    status: LeaseStatus
    holder: str
    detail: str
    heartbeat_age: float | None
    budget_used: float | None = None  # 0..1 from the live session's heartbeat
    phase: str | None = None  # what the live session says it is doing


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        parsed = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)  # the engine writes UTC
    return parsed.timestamp()


def describe_holder(lease: SessionLease) -> str:
    """`session 6650a1b2-3f2a91 on bastion-1 pid 4242 (alice)`, with what is known."""
    text = f"session {lease.id}"
    if lease.host:
        text += f" on {lease.host}"
    if lease.pid:
        text += f" pid {lease.pid}"
    if lease.user:
        text += f" ({lease.user})"
    return text


def lease_state(
    lease: SessionLease | None,
    heartbeat: dict | None,
    *,
    now: float,
    host: str,
    stale_after: float = STALE_AFTER,
) -> LeaseState:
    """Decide whether the lease's holder still drives the ledger.

    `dead`: the holder runs on this host and its pid is gone (or now belongs to a
    process with another start time). `stale`: its heartbeat is older than
    `stale_after` seconds, or there is none and the lease is older than that (or of
    unknown age). Otherwise `live`. A heartbeat written by another session is ignored.
    """
    if lease is None:
        return LeaseState("none", "", "no session holds this ledger", None)
    holder = describe_holder(lease)
    if heartbeat is not None and heartbeat.get("session") != lease.id:
        heartbeat = None  # a leftover from an earlier session proves nothing about this one
    age = None if heartbeat is None else max(0.0, now - float(heartbeat["at"]))

    if lease.host and lease.host == host and lease.pid:
        if not pid_alive(lease.pid, lease.pid_start):
            why = (
                f"pid {lease.pid} now belongs to another process"
                if pid_alive(lease.pid)
                else f"pid {lease.pid} is no longer running"
            )
            return LeaseState("dead", holder, f"{holder} is dead: {why}", age)

    if age is not None:
        if age > stale_after:
            return LeaseState(
                "stale",
                holder,
                f"{holder}, last heartbeat {_ago(age)} ago (stale after {_ago(stale_after)})",
                age,
            )
        live = f"{holder}, heartbeat {_ago(age)} ago"
        phase = heartbeat.get("phase")
        if phase:
            live += f", {phase}"
        used = heartbeat.get("budget_used")
        if isinstance(used, (int, float)) and not isinstance(used, bool):
            live += f", budget {used:.0%} used"
        else:
            used = None
        return LeaseState("live", holder, live, age, float(used) if used is not None else None, phase or None)

    started = _epoch(lease.started_at)
    if started is None:
        return LeaseState(
            "stale", holder, f"{holder} has no heartbeat and no known start time", None
        )
    if now - started > stale_after:
        return LeaseState(
            "stale",
            holder,
            f"{holder} has written no heartbeat since it started {_ago(now - started)} ago",
            None,
        )
    return LeaseState(
        "live",
        holder,
        f"{holder}, started {_ago(now - started)} ago, no heartbeat yet",
        None,
    )
