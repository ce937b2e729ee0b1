"""Every revision the engine writes, kept in the ledger's history journal: `ledger_write` records.

    history.record(journal, ledger, before_data, after_data, names, base)   # by a store, after its write
    history.apply(data, record)                                              # time travel: the next revision

The history journal is the ledger's journal's twin, written by the same writer (sealed
in a hash chain, indexed, redacted, fsynced): `<ledger>.history.jsonl` beside a file
ledger, the journal table under the name `LEDGER#history` for PostgreSQL (a URL's
fragment never holds a `#`, so no ledger can have that name). It is apart from the
journal so that the log pane, the planner's brief and `handoff journal` read what
happened, not one more line per write. With it `handoff show --at REV` rebuilds the whole
file as it was (`ledger_at`, below), not only what the other records say about
targets. Each engine write journals what it changed: the top-level keys whose value
changed (`set`, `unset`) and the whole data of each target it changed (`targets`,
`removed`), on top of revision `base`, as the document says them (the file's content,
not the model's defaults: `yaml.safe_load` of the file at that revision is what
`apply` gives back). A write whose starting point the journal does not
hold (the first write under history, a file edited outside the engine, a write whose
record was lost) journals the whole ledger instead (`full`), and later ones diff from it.
Values are redacted like every journal field; the records are sealed in the chain, so a
rebuilt ledger is as tamper-evident as the rest of the journal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.audit.journal import Journal
from engine.audit.journal_io import HISTORY_SUFFIX
from engine.codec.jsontext import plain
from engine.errors import HandoffError

KIND = "ledger_write"
ACTOR = "engine (store)"
SUFFIX = HISTORY_SUFFIX
_NAMED = 10  # targets named in a record's message; the rest are counted


class History(Journal):
    """A file ledger's history journal: the journal's writer, beside the same ledger."""

    def _ledger(self) -> str:
        return self.path.removesuffix(SUFFIX)

    def _head_gone(self, fd: int, end: int) -> tuple[str | None, int | None]:
        return None, None  # the ledger's last-write record names the journal's head, not this one's

    def _erased(self, rev: int | None) -> str | None:
        return None  # the twin of the journal: what says the journal was erased, not the other way round


def file_journal(ledger_path: str, *, read_only: bool = False) -> History:
    """The history journal beside a file ledger."""
    return History(os.path.realpath(ledger_path) + SUFFIX, read_only=read_only)


def pg_name(ledger: str) -> str:
    """The name a PostgreSQL ledger's history journal goes by in the journal table."""
    return ledger + "#history"


def fields(before: dict[str, Any], after: dict[str, Any], names: Iterable[str] | None, base: int | None) -> dict[str, Any]:
    """The record's fields for one write, from the document's data before and after it
    (what the file says, not the model's defaults): the whole of `after` when `base` is
    None (the journal has no copy of where this write started), else what changed (only
    the targets in `names` can have; all when None)."""
    if base is None:
        return {"full": plain(after)}
    out: dict[str, Any] = {"base": base}
    top = {k: v for k, v in after.items() if k != "targets" and (k not in before or before[k] != v)}
    if top:
        out["set"] = plain(top)
    gone = [k for k in before if k != "targets" and k not in after]
    if gone:
        out["unset"] = gone
    old, new = before.get("targets") or {}, after.get("targets") or {}
    look = set(old) | set(new) if names is None else set(names)
    # In the file's order; one name has no order to keep, and needs no walk through 10,000 to find.
    walk_new, walk_old = (look, look) if len(look) == 1 else (new, old)
    targets = {n: new[n] for n in walk_new if n in look and n in new and (n not in old or old[n] != new[n])}
    if targets:
        out["targets"] = plain(targets)
    removed = [n for n in walk_old if n in look and n in old and n not in new]
    if removed:
        out["removed"] = removed
    return out


def record(journal, ledger, before: dict[str, Any], after: dict[str, Any], names: Iterable[str] | None,
           base: int | None, *, conn=None, journal_head: int | None = None, body_digest: str | None = None) -> str | None:
    """Journal the write that made `ledger` (its revision; `after` is its document's data)
    from revision `base` (None: the journal does not hold `base`, so the whole document is
    journaled). None when written; why not when the record could not be written: the
    journal notes the gap, and the next write journals the whole ledger again. With `conn`
    (PostgreSQL) the record goes into that transaction: it commits with the ledger's row, or
    neither does. PostgreSQL's also name the seq of the ledger's journal's newest row then
    (`journal_head`) and the digest of the text the row now holds (`body_digest`)."""
    body = fields(before, after, names, base)
    for key, value in (("journal_head", journal_head), ("body_digest", body_digest)):
        if value is not None:
            body[key] = value
    journal.set_redact(ledger.redact)
    if conn is not None:
        journal.append_in(conn, KIND, message(ledger.revision, body), actor=ACTOR, rev=ledger.revision, **body)
        return None
    try:
        journal.append(KIND, message(ledger.revision, body), actor=ACTOR, rev=ledger.revision, **body)
    except HandoffError as err:
        return getattr(err, "reason", None) or err.message  # the ledger is written: the command says so (exit 1)
    return None


def message(revision: int, record: dict[str, Any]) -> str:
    """One line a person reads in the journal: which revision, and what it changed."""
    if "full" in record:
        count = len((record["full"] or {}).get("targets") or {})
        return (f"revision {revision} written; the whole ledger ({count} target{'s' if count != 1 else ''}) is kept "
                "here, and each later write's changes after it")
    keys = sorted(k for k in record.get("set", {}) if k != "revision") + list(record.get("unset", []))
    names = list(record.get("targets", {})) + list(record.get("removed", []))
    parts = []
    if names:
        parts.append(", ".join(names[:_NAMED]) + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""))
    if keys:
        parts.append(", ".join(keys))
    return f"revision {revision} written: {'; '.join(parts) or 'revision only'}"


def apply(data: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The ledger after `record`, given the ledger `data` at its base (a new dict; `data`
    is not changed). A `full` record is the ledger itself."""
    if "full" in record:
        full = dict(record["full"] or {})
        full["targets"] = dict(full.get("targets") or {})
        return full
    out = {k: v for k, v in data.items() if k not in record.get("unset", [])}
    out.update(record.get("set", {}))
    targets = dict(out.get("targets") or {})
    for name in record.get("removed", []):
        targets.pop(name, None)
    targets.update(record.get("targets", {}))
    out["targets"] = targets
    return out


@dataclass
class LedgerThen:
    """The whole ledger at a revision, rebuilt from `ledger_write` records, or why not."""

    revision: int  # the revision asked for
    data: dict[str, Any] | None = None  # the ledger's data as written at `written` (None: not rebuildable)
    written: int | None = None  # the last revision written at or before `revision`
    seqs: list[int] = field(default_factory=list)  # the records it was rebuilt from (first, last)
    why: str = ""  # why it could not be rebuilt
    gap: bool = False  # a write the journal should hold is missing: the record is incomplete


def ledger_at(records: Iterable[dict[str, Any]], rev: int) -> LedgerThen:
    """Fold the `ledger_write` records up to revision `rev` (one pass, in journal order).

    A diff applies only on top of the revision it names as its `base`; a diff whose base
    the fold does not hold, or a revision some record names with no write record for it,
    makes the revision unrebuildable until the next whole copy: said, never guessed."""
    out = LedgerThen(rev)
    data: dict[str, Any] | None = None
    at: int | None = None
    first: int | None = None
    last: int | None = None
    named = 0  # the highest revision any record up to `rev` names
    for r in records:
        number = r.get("rev")
        if not isinstance(number, int) or number > rev:
            continue
        named = max(named, number)
        if r.get("kind") != KIND:
            continue
        if "full" in r:
            if at is not None and number <= at:
                continue
            seq = r.get("seq")
            data, at, first = apply({}, r), number, seq if isinstance(seq, int) else None
            out.why, out.gap = "", False  # an earlier loss does not touch what follows a whole copy
        elif data is not None and at is not None and r.get("base") == at and number > at:
            data, at = apply(data, r), number
        elif at is not None and number <= at:
            continue  # a write journaled late (another host's): what it made is held already
        else:
            out.why = (f"the journal's record of revision {number} (seq {r.get('seq')}) changes revision "
                       f"{r.get('base')}, which the journal does not hold"
                       + (f" (it holds revision {at})" if at is not None else ""))
            data, at, out.gap = None, None, True
            continue
        seq = r.get("seq")
        last = seq if isinstance(seq, int) else last
    if data is None:
        out.why = out.why or ("the journal holds no copy of the whole ledger at or before this revision "
                              "(it was written before the engine journaled every write)")
        return out
    if at is None:  # only with data None, handled above; said for the type checker
        return out
    if named > at:
        out.gap = True
        out.why = (f"revision {named} is named in the journal but its write was not journaled (the last one "
                   f"journaled by then is revision {at})")
        return out
    out.data, out.written, out.seqs = data, at, [s for s in (first, last) if s is not None]
    return out
