"""A session id is a name, not a credential: renewing a live lease needs what a copy of
the id does not carry.

- A holder with a pid (a built-in session, `handoff run`): the renewing process must be
  the one the lease records (same pid, process start time and boot id).
- A Claude Code session (no pid: hook processes come and go): a secret nonce in a
  0600 file in the per-user state folder (`$XDG_STATE_HOME/handoff/sessions/`),
  created when the session first takes a lease; the lease records only a hash of it
  (`bind`), so reading the ledger gives nothing to present. A process of another user
  or on another host presenting the id cannot renew the lease. Limit: a process of the
  same user on the same host can read the file, as it could read the session's memory.
- A Temporal workflow: its runs retry on other workers by design; not bound here.
"""

from __future__ import annotations

import os

from engine.host.digests import sha256_hex
from engine.host.folders import state_dir


def _sessions_dir() -> str:
    return os.path.join(state_dir(), "sessions")


def _nonce_path(session_id: str) -> str:
    name = sha256_hex(session_id.encode("utf-8", "surrogateescape"))[:32] + ".nonce"
    return os.path.join(_sessions_dir(), name)


def session_bind(session_id: str, *, create: bool) -> str | None:
    """The hash of this user's nonce for `session_id` (made 0600 if `create` and missing), or None."""
    path = _nonce_path(session_id)
    try:
        with open(path, encoding="ascii") as fh:
            nonce = fh.read().strip()
    except (OSError, ValueError):
        nonce = ""
    if not nonce and create:
        import secrets  # only a session's first call makes a nonce

        os.makedirs(os.path.dirname(path), exist_ok=True, mode=0o700)
        nonce = secrets.token_hex(16)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # made in the same instant by another hook of this session
            return session_bind(session_id, create=False)
        with os.fdopen(fd, "w") as fh:
            fh.write(nonce)
    if not nonce:
        return None
    return sha256_hex(nonce.encode("ascii"))[:32]


def not_the_holder(held, presented) -> str | None:
    """Why `presented` (a lease with the same id as the live `held` one) is not its
    holder, or None when it is."""
    if held.runtime == "temporal":
        return None
    if held.runtime == "claude-code":
        if presented.runtime != "claude-code":
            return "the lease is a Claude Code session's; this is another kind of process"
        if not held.bind or held.bind != presented.bind:
            return "it does not have that session's secret (a 0600 file in its user's state folder)"
        return None
    if held.pid is not None:
        same = (presented.pid == held.pid and presented.pid_start == held.pid_start
                and presented.boot_id == held.boot_id)
        if not same:
            return f"the lease is held by pid {held.pid} on {held.host or 'its host'}; this is another process"
    return None


def holds_here(held, session_id: str) -> bool:
    """Whether this process, presenting Claude Code session `session_id`, holds the lease `held`."""
    return (held is not None and held.id == session_id and held.runtime == "claude-code"
            and held.bind is not None and held.bind == session_bind(session_id, create=False))
