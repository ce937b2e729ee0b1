"""The journal of a PostgreSQL ledger: the `handoff_journal` table, the same records as
the file journal. `seq` is the row id and the read offset; an append takes a per-ledger
advisory lock, so seq order is commit order and a reader of `seq > offset` never skips
a record committed late. Records lost while the database was away are noted and the
next append writes a `journal_gap` record for each first (in this process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from engine.audit.chain import GENESIS, link_of, seal
from engine.audit.journal_base import JournalBase, JournalWriteError, gap_of, gap_record, make_record
from engine.errors import HandoffError
from engine.store.pg_conn import Db


class PgJournal(JournalBase):
    """The journal in a table; `seq` is the row id, used as the read offset."""

    def __init__(self, db: Db, ledger: str, *, read_only: bool = False, redact: list[str] | None = None) -> None:
        super().__init__(f"{db.shown}#{ledger} (handoff_journal)", redact=redact, read_only=read_only)
        self.db = db
        self.ledger = ledger
        self._gaps: list[dict[str, Any]] = []  # records lost while the database was away

    def proofs(self) -> Any:
        from engine.store.pg_attest import PgProofs

        return PgProofs(self.db, self.ledger)

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None, **fields: Any) -> dict[str, Any]:
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields)
        if self.read_only:
            return record
        rows = []
        for gap in self._gaps:
            gap_kind, gap_msg, gap_fields = gap_record(gap)
            gap_rev, gap_target = gap_fields.pop("rev"), gap_fields.pop("target")
            rows.append(make_record(self.redactor, gap_kind, gap_msg, actor=actor, rev=gap_rev, target=gap_target, fields=gap_fields))
        rows.append(record)

        def work(conn):
            return self._insert(conn, rows)

        try:
            record["seq"] = self.db.run(work)
        except HandoffError as err:
            if rev is not None:
                self._gaps.append(gap_of(record, str(err)))
            raise JournalWriteError(f"{self.path}: the journal record could not be written: {err}", rev=rev, reason=str(err)) from None
        self._gaps.clear()
        return record

    def _insert(self, conn, rows: list[dict[str, Any]]) -> int:
        """Seal and insert `rows` in `conn`'s transaction; the last one's seq.

        `Db.run` tries again when the connection drops, also after a COMMIT the server
        applied but whose reply was lost. Rows sealed by that attempt carry their `chain`;
        when the journal's last record is the last of them, as sealed, they are in: the
        same records are not written twice (a step_start twice reads as two starts)."""
        # One writer per ledger at a time: seq order is commit order, and each row is
        # sealed after the one before it (engine.audit.chain).
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('handoff_journal'), hashtext(%s))", (self.ledger,))
        last = conn.execute("SELECT seq, record FROM handoff_journal WHERE ledger = %s ORDER BY seq DESC LIMIT 1",
                            (self.ledger,)).fetchone()
        if last is not None and "chain" in rows[-1] and dict(last[1]) == json.loads(json.dumps(rows[-1], ensure_ascii=False)):
            return last[0]
        prev = link_of(dict(last[1])) if last else GENESIS
        for row in rows:
            prev = seal(row, prev)["chain"]
        seqs = [conn.execute("INSERT INTO handoff_journal (ledger, record) VALUES (%s, %s::jsonb) RETURNING seq",
                             (self.ledger, json.dumps(row, ensure_ascii=False))).fetchone()[0] for row in rows]
        return seqs[-1]

    def append_in(self, conn, kind: str, msg: str, *, actor: str, rev: int | None = None, **fields: Any) -> dict[str, Any]:
        """Append one record inside `conn`'s open transaction: it commits (or not) with
        whatever else that transaction writes (a ledger write and its `ledger_write` record)."""
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=None, fields=fields)
        record["seq"] = self._insert(conn, [record])
        return record

    def last_write_rev(self, conn) -> int | None:
        """The revision of this ledger's newest `ledger_write` record (engine.store.history), in `conn`."""
        return self.last_write(conn)[0]

    def last_write(self, conn) -> tuple[int | None, int | None]:
        """(revision, `journal_head`) of this history journal's newest `ledger_write` record, in `conn`."""
        row = conn.execute("SELECT record->'rev', record->'journal_head' FROM handoff_journal WHERE ledger = %s "
                           "AND record->>'kind' = %s AND record->>'target' IS NULL ORDER BY seq DESC LIMIT 1",
                           (self.ledger, "ledger_write")).fetchone()
        if row is None:
            return None, None
        return tuple(value if isinstance(value, int) and not isinstance(value, bool) else None for value in row)  # type: ignore[return-value]

    def head_after(self, conn, named: int | None, revision: int) -> int | None:
        """Inside a ledger write's transaction: this journal's newest seq (what the write's
        history record names as the journal's head), after noting a `chain_break` when the
        record the last write named so (seq `named`) is gone. Rows are never deleted by the
        engine: a head gone means the journal's rows were deleted (cut off its end, or all of
        them); once the next write had chained on to what was left, nothing else said so."""
        if named is not None and conn.execute("SELECT 1 FROM handoff_journal WHERE ledger = %s AND seq = %s",
                                              (self.ledger, named)).fetchone() is None:
            self.append_in(conn, "chain_break", "journal chain broken before this record: the ledger's write before "
                           f"revision {revision} named the journal's record at seq {named} as its newest, and it is gone: "
                           "records were deleted from the journal (cut off its end, or all of them erased)",
                           actor="engine (store)", missing_head=named)
        return conn.execute("SELECT max(seq) FROM handoff_journal WHERE ledger = %s", (self.ledger,)).fetchone()[0]

    def highest_revision(self) -> int:
        """The highest ledger revision the journal records (0 if none), as the file journal's
        index keeps it: a journal whose newest is below the ledger row's revision, or below
        the history rows', lost its last records (engine.checks.chain)."""
        sql = ("SELECT max((record->>'rev')::numeric) FROM handoff_journal WHERE ledger = %s "
               "AND jsonb_typeof(record->'rev') = 'number'")
        found = self.db.run(lambda conn: conn.execute(sql, (self.ledger,)).fetchone()[0])
        return int(found) if found is not None else 0

    def _select(self, where: str, params: tuple, order: str = "ASC", limit: int | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT seq, record FROM handoff_journal WHERE ledger = %s {where} ORDER BY seq {order}"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self.db.run(lambda conn: conn.execute(sql, (self.ledger, *params)).fetchall())
        out = []
        for seq, record in rows:
            record = dict(record)
            record["seq"] = seq
            out.append(record)
        return out

    def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        records = self._select("AND seq > %s", (offset,))
        return records, (records[-1]["seq"] if records else offset)

    def stream(self, batch: int = 5000) -> Iterator[dict[str, Any]]:
        """Every record in seq order, fetched `batch` rows at a time (memory does not grow
        with the journal)."""
        offset = 0
        while True:
            rows = self._select("AND seq > %s", (offset,), limit=batch)
            yield from rows
            if len(rows) < batch:
                return
            offset = rows[-1]["seq"]

    def tail(self, n: int = 200) -> list[dict[str, Any]]:
        return list(reversed(self._select("", (), "DESC", n)))

    def end_offset(self) -> int:
        tail = self.tail(1)
        return tail[-1]["seq"] if tail else 0

    def for_target(self, target: str, limit: int = 200) -> list[dict[str, Any]]:
        return list(reversed(self._select("AND record->>'target' = %s", (target,), "DESC", limit)))

    def verify(self, head: dict[str, Any] | None = None):
        """Check the chain of this ledger's rows (engine.audit.verify)."""
        from engine.audit.verify import verify_rows

        return verify_rows((r.pop("seq"), r) for r in self.stream())

    def last_of(self, kind: str, **match: Any) -> dict[str, Any] | None:
        """The newest record of `kind` matching `match`: through the (ledger, kind, target)
        index when a target is named, unbounded in reach."""
        if "target" in match:
            rows = self._select("AND record->>'kind' = %s AND record->>'target' = %s AND record @> %s::jsonb",
                                (kind, match["target"], json.dumps(match)), "DESC", 1)
        else:
            rows = self._select("AND record->>'kind' = %s AND record @> %s::jsonb", (kind, json.dumps(match)), "DESC", 1)
        return rows[0] if rows else None
