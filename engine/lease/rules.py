"""One lease, three kinds of holder: the rules that make a holder live, dead or stale.

Whoever drives a ledger holds its lease (`session:` in the ledger): a built-in session
(`handoff resume`: a pid, a host, a boot id and a pid namespace), a Claude Code session
(its session id; hook processes come and go, so no pid) or a Temporal workflow (its
workflow id). Proof of life is a heartbeat the store keeps beside the ledger (a sidecar
file, or a table row for PostgreSQL), written every couple of seconds by the holder.

The rules, the same for every holder:
- a heartbeat's age is measured on the store's own clock (the sidecar's mtime against
  a probe file written beside it; PostgreSQL's `now()`), never one host's clock
  against another's;
- a fresh heartbeat means live; older than `stale_after()` seconds
  (HANDOFF_LEASE_STALE_AFTER, default 180) means stale, and a stale lease is taken over;
- a pid is checked only where it means something: the lease records it, and we run on
  the same host, boot and pid namespace. Then a gone pid is dead at once;
- a holder writes its first heartbeat before its lease becomes visible, so a lease
  with no heartbeat of its own is stale (unless its pid is provably running here).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from engine.approvals.identity import hostname
from engine.host.procs import boot_id, pid_alive, pid_namespace
from engine.settings import seconds

if TYPE_CHECKING:  # only annotations here: the hook's fast path imports this module without the model
    from engine.ledger.model import SessionLease

LeaseStatus = Literal["none", "live", "dead", "stale"]
BEAT_EVERY = 2.0


def stale_after() -> float:
    """Seconds without a heartbeat after which a lease is stale (HANDOFF_LEASE_STALE_AFTER)."""
    return seconds("HANDOFF_LEASE_STALE_AFTER")


def new_session_id() -> str:
    """A short unique holder id that sorts by start time: `<epoch hex>-<random hex>`."""
    return f"{int(time.time()):08x}-{secrets.token_hex(3)}"


def where_pids_count() -> dict[str, Any]:
    """What a lease records so that its pid can be checked later: host, boot, pid namespace."""
    return {"host": hostname(), "boot_id": boot_id(), "pid_ns": pid_namespace()}


class HeartbeatThread(threading.Thread):
    """Beats every `interval` seconds until stop(); knows how long it has been unable to.

    `state_fn()` returns what the heartbeat says besides the holder (budget_used, phase,
    detail, ...). A failed write does not kill the thread: `silent_for()` grows, and the
    holder must stop acting once it passes half the stale limit (another holder may
    soon judge it stale and take over)."""

    def __init__(self, heartbeat, holder: str, interval: float = BEAT_EVERY,
                 state_fn: Callable[[], dict[str, Any]] | None = None) -> None:
        super().__init__(name=f"heartbeat-{holder}", daemon=True)
        self.heartbeat = heartbeat
        self.holder = holder
        self.interval = interval
        self.state_fn = state_fn
        self.last_error: BaseException | None = None
        self.lost = False  # another holder's heartbeat replaced ours: we were taken over
        # Why the holder's process was asked to end (a signal: engine.langgraph.runtime), for
        # every part of it that shares this beat: it finishes what runs, starts nothing, hands off.
        self.asked_to_end: str | None = None
        self.beats = 0
        self._last_ok = time.monotonic()
        self._stop_event = threading.Event()
        self._state: dict[str, Any] = {"phase": "running"}

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.beat()

    def beat(self) -> bool:
        """Write one heartbeat now; True if it was written. A holder whose place another
        holder has taken (a fresh heartbeat of theirs) never writes over theirs again."""
        if self.lost:
            return False
        theirs = self.heartbeat.current()
        if theirs is not None and theirs.get("session") != self.holder and theirs.get("age", 1e9) <= stale_after():
            self.lost = True
            self.last_error = RuntimeError(f"the heartbeat is {theirs.get('session')}'s now: another holder took over")
            return False
        if self.state_fn is not None:
            try:
                self._state = {**self._state, **self.state_fn()}
            except Exception as error:  # noqa: BLE001 - kept in last_error; liveness matters more than detail
                self.last_error = error
        try:
            self.heartbeat.write(self.holder, **self._state)
        except Exception as error:  # noqa: BLE001 - any failure to beat counts; silent_for() tells the holder
            self.last_error = error
            return False
        self.beats += 1
        self._last_ok = time.monotonic()
        return True

    def silent_for(self) -> float:
        """Seconds since the last heartbeat that was written."""
        return time.monotonic() - self._last_ok

    def can_act(self) -> str | None:
        """None while this holder may act; otherwise why not (it was taken over, or it could
        not beat for half the stale limit)."""
        if self.lost:
            return f"was taken over ({self.last_error})"
        limit = stale_after() / 2
        silent = self.silent_for()
        if silent <= limit:
            return None
        why = f": {self.last_error}" if self.last_error else ""
        return f"could not write its heartbeat for {silent:.0f}s (limit {limit:.0f}s){why}"

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop beating and wait for the thread to end."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout)


@dataclass
class LeaseState:
    """What someone about to act should think of the current lease."""

    status: LeaseStatus
    holder: str
    detail: str
    heartbeat_age: float | None
    budget_used: float | None = None  # 0..1 from the live holder's heartbeat
    phase: str | None = None  # what the live holder says it is doing
    beat: dict[str, Any] | None = None  # the live holder's heartbeat as written
    planner: str | None = None  # from the lease and the live holder's heartbeat (the TUI header)
    tokens_used: int | None = None
    tokens_budget: int | None = None
    cost_usd: float | None = None
    allow_unenforced: bool = False  # started with --allow-unenforced


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"


def describe_holder(lease: SessionLease) -> str:
    """`session 6650a1b2-3f2a91 on bastion-1 pid 4242 (alice)`, with what is known."""
    kind = {"claude-code": "Claude Code session", "temporal": "temporal workflow",
            "langgraph": "langgraph thread"}.get(lease.runtime or "", "session")
    text = f"{kind} {lease.id}"
    if lease.host:
        text += f" on {lease.host}"
    if lease.pid:
        text += f" pid {lease.pid}"
    if lease.user:
        text += f" ({lease.user})"
    return text


def _pid_checkable(lease: SessionLease, here: dict[str, Any]) -> bool:
    """A pid means something here only on the same host, boot and pid namespace."""
    return bool(
        lease.pid and lease.host == here["host"]
        and lease.boot_id and lease.boot_id == here["boot_id"]
        and lease.pid_ns and lease.pid_ns == here["pid_ns"]
    )


def lease_state(lease: SessionLease | None, beat: dict | None, *, here: dict[str, Any] | None = None,
                limit: float | None = None) -> LeaseState:
    """Decide whether the lease's holder still drives the ledger (see the module's rules).

    `beat`: the store's heartbeat with its `age` (store clock); one written by another
    holder is ignored. `here`: where_pids_count() of the caller."""
    if lease is None:
        return LeaseState("none", "", "no session holds this ledger", None)
    here = here or where_pids_count()
    limit = stale_after() if limit is None else limit
    holder = describe_holder(lease)
    if beat is not None and beat.get("session") != lease.id:
        beat = None  # a leftover from an earlier holder proves nothing about this one
    age = None if beat is None or not isinstance(beat.get("age"), (int, float)) else float(beat["age"])

    if _pid_checkable(lease, here) and lease.pid is not None:
        if not pid_alive(lease.pid, lease.pid_start):
            why = (f"pid {lease.pid} now belongs to another process" if pid_alive(lease.pid)
                   else f"pid {lease.pid} is no longer running")
            return LeaseState("dead", holder, f"{holder} is dead: {why}", age)
        if age is None:
            return LeaseState("live", holder, f"{holder}, running, no heartbeat yet", None)
    if age is None or beat is None:
        return LeaseState("stale", holder, f"{holder} has no heartbeat (no proof of life)", None)
    if age > limit:
        return LeaseState("stale", holder, f"{holder}, last heartbeat {_ago(age)} ago (stale after {_ago(limit)})", age)
    live = f"{holder}, heartbeat {_ago(age)} ago"
    phase = beat.get("phase")
    if phase:
        live += f", {phase}"
    used = beat.get("budget_used")
    if isinstance(used, (int, float)) and not isinstance(used, bool):
        live += f", budget {used:.0%} used"
    else:
        used = None
    return LeaseState("live", holder, live, age, float(used) if used is not None else None, phase or None, beat,
                      planner=beat.get("planner") or lease.planner, tokens_used=beat.get("tokens_used"),
                      tokens_budget=beat.get("tokens_budget"), cost_usd=beat.get("cost_usd"),
                      allow_unenforced=bool(lease.allow_unenforced))
