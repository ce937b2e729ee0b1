"""The per-user folders the engine keeps its own files in, outside any ledger's folder.

- `cache_dir()`: `$XDG_CACHE_HOME/handoff` (default `~/.cache/handoff`): the parse cache
  (engine.store.parse_cache) and the Claude Code hook's facts (engine.hooks.facts).
- `state_dir()`: `$XDG_STATE_HOME/handoff` (default `~/.local/state/handoff`): the
  high-water marks (engine.store.highwater), Claude Code sessions' nonces
  (engine.lease.binding) and a database ledger's session log (engine.api).
- `tui_state_dir()`: `$XDG_STATE_HOME/handoff-tui`: the screen's per-user state
  (engine.host.userstate).

An agent must not write any of them: the hook refuses it as it refuses a write to the
ledger (engine.hooks.writes), since forged facts or marks would blind a fence.
"""

from __future__ import annotations

import os
import stat

from engine.host.digests import sha256_hex


def _base(variable: str, *default: str) -> str:
    return os.environ.get(variable) or os.path.join(os.path.expanduser("~"), *default)


def cache_dir() -> str:
    return os.path.join(_base("XDG_CACHE_HOME", ".cache"), "handoff")


def state_dir() -> str:
    return os.path.join(_base("XDG_STATE_HOME", ".local", "state"), "handoff")


def tui_state_dir() -> str:
    return os.path.join(_base("XDG_STATE_HOME", ".local", "state"), "handoff-tui")


def cache_file(real: str, suffix: str) -> str:
    """The cache file of the ledger at real path `real` (named by the hash of that path):
    `.parse` for the parse cache, `.hook.json` for the hook's facts."""
    return os.path.join(cache_dir(), sha256_hex(real.encode("utf-8", "surrogateescape"))[:32] + suffix)


def private(path: str, kind=stat.S_ISREG) -> bool:
    """Is `path` (not followed) a file (or with `kind`, a folder) of this user that nobody else
    may read or write? What a cache must be before it is trusted or written into."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return kind(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def engine_dirs() -> tuple[str, ...]:
    """All three, as real paths (what a command's path is compared with)."""
    return tuple(os.path.realpath(d) for d in (cache_dir(), state_dir(), tui_state_dir()))
