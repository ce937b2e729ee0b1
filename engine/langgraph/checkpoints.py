"""The PostgreSQL checkpointer, its retention and its size.

LangGraph's PostgresSaver keeps every checkpoint of a thread forever (langgraph issue
8531); a ledger waiting days on approvals would grow its tables without end. After each
completed super-step the runtime keeps the newest `keep` checkpoints of the thread (per
namespace) and deletes the rest, with the writes and blobs only they referenced. Old
checkpoints are only ever replay points, and a replay decides from the ledger anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver

TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

_PRUNE = (
    """WITH ranked AS (SELECT checkpoint_ns, checkpoint_id,
              row_number() OVER (PARTITION BY checkpoint_ns ORDER BY checkpoint_id DESC) AS r
         FROM checkpoints WHERE thread_id = %(t)s)
       DELETE FROM checkpoints c USING ranked
        WHERE c.thread_id = %(t)s AND c.checkpoint_ns = ranked.checkpoint_ns
          AND c.checkpoint_id = ranked.checkpoint_id AND ranked.r > %(keep)s""",
    """DELETE FROM checkpoint_writes w WHERE w.thread_id = %(t)s AND NOT EXISTS (
         SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns
            AND c.checkpoint_id = w.checkpoint_id)""",
    # A blob is kept while any kept checkpoint's channel_versions names its version.
    """DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(t)s AND NOT EXISTS (
         SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
            AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)""",
)


@contextmanager
def saver(url: str) -> Iterator[PostgresSaver]:
    """A set-up PostgresSaver on `url` (its tables created on first use)."""
    with PostgresSaver.from_conn_string(url) as s:
        s.setup()
        yield s


def prune(s: PostgresSaver, thread: str, keep: int) -> int:
    """Keep the newest `keep` (>= 1) checkpoints of `thread`; returns how many were deleted."""
    with s._cursor() as cur, cur.connection.transaction():  # the saver's own lock and connection
        cur.execute(_PRUNE[0], {"t": thread, "keep": max(1, keep)})
        deleted = cur.rowcount
        for sql in _PRUNE[1:]:
            cur.execute(sql, {"t": thread})
    return deleted


def figures(s: PostgresSaver, thread: str) -> dict[str, int]:
    """The thread's checkpoint count and the three tables' total size in bytes."""
    with s._cursor() as cur:
        cur.execute("SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s", (thread,))
        count = _one(cur.fetchone(), "n")
        cur.execute("SELECT " + " + ".join(f"pg_total_relation_size(to_regclass('{t}'))" for t in TABLES) + " AS b")
        size = _one(cur.fetchone(), "b")
    return {"checkpoints": int(count), "bytes": int(size or 0)}


def _one(row: dict[str, Any] | None, key: str) -> Any:
    """A column of the one row an aggregate query returns (always one row)."""
    if row is None:
        raise RuntimeError(f"an aggregate query returned no row (column {key})")
    return row[key]
