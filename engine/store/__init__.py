"""Ledger stores: `open_store(location)` picks the file store or the PostgreSQL store."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # engine.store.base is imported by the stores themselves: a sidecar or an atomic
    # write (the Claude Code hook's heartbeat, on every tool call) needs none of it
    from engine.store.base import Store


def open_store(location: str, *, read_only: bool = False) -> Store:
    """A store for a path (YAML file) or a `postgresql://` URL."""
    if location.startswith(("postgresql://", "postgres://")):
        from engine.store.postgres import PostgresStore

        return PostgresStore(location, read_only=read_only)
    from engine.store.file import FileStore

    return FileStore(location, read_only=read_only)

