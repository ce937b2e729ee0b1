"""Per-user state of other parts (e.g. the TUI's "since you last looked"), kept under the
XDG state folder, never beside the ledger (observers must not write there)."""

from __future__ import annotations

import fcntl
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.errors import HandoffError
from engine.host.digests import sha256_hex
from engine.host.flock import flock_holder, take_within
from engine.host.folders import tui_state_dir
from engine.store.atomic import atomic_write

USER_STATE_WAIT = 2.0  # seconds a save waits for another save of the same user (each holds the lock for milliseconds)


def _file(key: str) -> Path:
    name = sha256_hex(key.encode("utf-8"))[:24]
    return Path(tui_state_dir()) / f"{name}.json"


def load_user_state(key: str) -> dict[str, Any]:
    """What this user saved for `key` (e.g. a ledger's real path); {} if nothing or unreadable."""
    try:
        data = json.loads(_file(key).read_text("utf-8"))
    except (FileNotFoundError, ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


def save_user_state(key: str, data: dict[str, Any]) -> None:
    """Save atomically; creates the state folder (mode 0700) if needed."""
    path = _file(key)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = dict(data, key=key)
    atomic_write(str(path), json.dumps(payload, ensure_ascii=False, indent=1).encode("utf-8"))


def _when(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def advance_user_state(key: str, data: dict[str, Any], *, at: str = "seen_at") -> bool:
    """Save `data` for `key` unless what is stored is newer by its `at` time; True if saved.

    A mark that only moves forward: two processes of one user (two browser tabs of one
    viewer, two terminals) each save what they showed, and the one that showed an older
    reading never replaces a newer one. The compare and the write happen under a lock on
    a sibling `.lock` file, so two saves at once cannot both win.
    """
    path = _file(key)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path.with_suffix(".lock"), "a+b") as lock:
        if not take_within(lock.fileno(), fcntl.LOCK_EX, USER_STATE_WAIT):
            # A mark is a convenience: quitting never waits longer than this for it.
            raise HandoffError(f"{path}: not saved; its lock has been held for more than {USER_STATE_WAIT:g}s by "
                               f"{flock_holder(lock.fileno())}")
        stored, ours = _when(load_user_state(key).get(at)), _when(data.get(at))
        if stored is not None and ours is not None and stored > ours:
            return False
        save_user_state(key, data)
        return True
