"""What `handoff slack` must remember across a restart, per ledger: each delivery it
received (its key, then its outcome) and each request message it posted (channel, ts,
what it shows, reminders sent).

A delivery is written here, durably, BEFORE Slack gets its ack and before anything is
acted on: a retry or a replay of a key already here is never acted on twice, and a key
received but not done (the process died) is finished on restart, so an approval is
neither lost nor doubled. File ledger: `<ledger>.slack.jsonl` beside it (append-only,
fsync'd, opened as every sidecar is: engine.store.sidecar). PostgreSQL ledger: the
`handoff_slack` table, a unique index making a key's claim atomic across processes.
No secret is ever written: a payload is stored without its `token` and `response_url`.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from engine.codec.timefmt import now_iso
from engine.host.flock import flock_holder, take_within
from engine.settings import seconds
from engine.store.sidecar import SidecarRefused, open_sidecar

_DROP = ("token", "response_url", "response_urls", "trigger_id")  # capabilities, not facts
# Slack waits 3 s for a request's acknowledgement (the HTTP answer, or the Socket Mode ack)
# and then sends it again: a claim waits for the record at most this long, so the refusal
# (503, or no ack) reaches Slack before it gives up on this try.
CLAIM_WAIT = 2.0

PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_slack (
    ledger text NOT NULL,
    seq bigserial,
    record jsonb NOT NULL,
    PRIMARY KEY (ledger, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS handoff_slack_delivery
    ON handoff_slack (ledger, (record->>'delivery'), (record->>'status')) WHERE record ? 'delivery';
"""


def stored_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` without what must never be stored (the verification token, response URLs)."""
    out = {k: v for k, v in payload.items() if k not in _DROP}
    if isinstance(out.get("view"), dict):
        out["view"] = {k: v for k, v in out["view"].items() if k not in ("blocks",)}
    return out


class State:
    """One ledger's Slack state; every method is safe from several threads."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.is_url = location.startswith(("postgresql://", "postgres://"))
        self._lock = threading.Lock()
        self.deliveries: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, dict[str, Any]] = {}
        if self.is_url:
            from engine.store.pg_conn import Db, split_location

            url, self.name = split_location(location)
            self.db = Db(url)
            self.db.run(lambda conn: conn.execute(PG_SCHEMA), autocommit=True)
        else:
            self.path = os.path.realpath(location) + ".slack.jsonl"
        for record in self._read():
            self._absorb(record)

    # -- storage -------------------------------------------------------------------

    def _read(self) -> list[dict[str, Any]]:
        if self.is_url:
            rows = self.db.run(lambda conn: conn.execute(
                "SELECT record FROM handoff_slack WHERE ledger = %s ORDER BY seq", (self.name,)).fetchall())
            return [r[0] for r in rows]
        try:
            with open(self.path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a crash mid-write: nothing was acted on for it
        return out

    def _write(self, record: dict[str, Any], *, unique: bool = False, wait: float | None = None) -> bool:
        """Append `record` durably; with `unique`, False when its delivery key and status are there.
        The record's lock is waited for HANDOFF_LOCK_TIMEOUT seconds, or `wait` when that is shorter."""
        if self.is_url:
            sql = "INSERT INTO handoff_slack (ledger, record) VALUES (%s, %s)" + (" ON CONFLICT DO NOTHING" if unique else "")
            return self.db.run(lambda conn: conn.execute(sql, (self.name, json.dumps(record))).rowcount) == 1
        fd = open_sidecar(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, ledger=self.location)
        try:
            limit = seconds("HANDOFF_LOCK_TIMEOUT")
            limit = limit if wait is None else min(limit, wait)
            if not take_within(fd, fcntl.LOCK_EX, limit):
                # Slack sends the event again when it is not acknowledged; nothing was acted on.
                raise SidecarRefused(f"{self.path}: its lock has been held for more than {limit:.3g}s by "
                                     f"{flock_holder(fd)}; nothing was recorded")
            if unique and self._file_has(fd, record):
                return False
            os.write(fd, (json.dumps(record, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii"))
            os.fsync(fd)
            return True
        finally:
            os.close(fd)

    @staticmethod
    def _file_has(fd: int, record: dict[str, Any]) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
            try:
                other = json.loads(line)
            except ValueError:
                continue
            if other.get("delivery") == record["delivery"] and other.get("status") == record["status"]:
                return True
        return False

    def _absorb(self, record: dict[str, Any]) -> None:
        if "delivery" in record:
            self.deliveries.setdefault(record["delivery"], {}).update(record)
        elif "message" in record:
            self.messages.setdefault(record["message"], {}).update(record)

    # -- deliveries ----------------------------------------------------------------

    def claim(self, key: str, payload: dict[str, Any], seal: Callable[[str, dict[str, Any]], str]) -> bool:
        """Record delivery `key` as received (durably). False: it was received before.
        Raises SidecarRefused when that cannot be done within CLAIM_WAIT seconds (this
        process's own writer, or another process, holds the record): nothing is recorded,
        and Slack, unacknowledged, sends the request again."""
        deadline = time.monotonic() + CLAIM_WAIT  # both waits together: Slack's 3 s are for the whole answer
        if not self._lock.acquire(timeout=CLAIM_WAIT):
            raise SidecarRefused(f"{self.path if not self.is_url else self.name}: this process has been writing its "
                                 f"Slack record for more than {CLAIM_WAIT:g}s; nothing was recorded")
        try:
            if key in self.deliveries:
                return False
            stored = stored_payload(payload)
            record = {"delivery": key, "status": "received", "at": now_iso(), "payload": stored, "seal": seal(key, stored)}
            if not self._write(record, unique=True, wait=max(0.0, deadline - time.monotonic())):
                return False
            self._absorb(record)
            return True
        finally:
            self._lock.release()

    def finish(self, key: str, outcome: str) -> None:
        """Delivery `key` was acted on: `outcome` says how (approved, refused: why)."""
        with self._lock:
            if self.deliveries.get(key, {}).get("status") == "done":
                return
            record = {"delivery": key, "status": "done", "at": now_iso(), "outcome": outcome}
            self._write(record, unique=True)
            self._absorb(record)

    def unfinished(self) -> list[tuple[str, Any, Any]]:
        """Deliveries received and never acted on to the end (the process died), each with the
        seal it was recorded with (engine.slack.app checks it before finishing one)."""
        with self._lock:
            return [(k, d.get("payload"), d.get("seal")) for k, d in self.deliveries.items() if d.get("status") == "received"]

    # -- messages ------------------------------------------------------------------

    def message(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self.messages.get(key)
            return dict(found) if found else None

    def note_message(self, key: str, **fields: Any) -> None:
        """Remember what the request message `key` is (channel, ts) and shows now."""
        with self._lock:
            record = {"message": key, **fields}
            self._write(record)
            self._absorb(record)

    def all_messages(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in self.messages.items()}
