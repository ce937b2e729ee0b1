"""The journal's hash chain: every record names the hash of the one before it.

A record's `chain` is the sha256 of its canonical JSON (sorted keys, no spaces, UTF-8)
without `chain` and `seq` (a PostgreSQL row gets its `seq` on insert, and a file
record's `seq` is its byte offset, checked on its own); its `prev` is the previous
record's `chain`, or GENESIS for the first. So a record edited, removed, inserted or
moved breaks the chain at that place, and a reader can say where. A record written
before the chain existed (an older journal) has no `chain`: it links by the hash of
its content, and the journal is sealed from its next record on.

A file journal's line is its record's canonical bytes followed by its place, `seq` then
`chain` (`sealed_line`): the last record is checked by hashing its line's bytes
(engine.audit.tail.sealed_tail), not by decoding and encoding again what may be a whole
ledger of JSON. A line in any other layout (an older journal, a hand edit) is read as JSON.
"""

from __future__ import annotations

import json
import os
from typing import Any

from engine.host.digests import sha256

GENESIS = "genesis"
_UNHASHED = ("chain", "seq")
# The `prev` of a record drafted before the journal's lock is held (per process: no record holds it).
_STAND_IN_PREV = "prev-" + os.urandom(16).hex()
_STAND_IN = b'"prev":"' + _STAND_IN_PREV.encode("ascii") + b'"'


def canonical(record: dict[str, Any]) -> bytes:
    """The bytes a record's `chain` is the hash of."""
    body = {k: v for k, v in record.items() if k not in _UNHASHED}
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def chain_hash(record: dict[str, Any]) -> str:
    """sha256 of the record's canonical form, hex."""
    return sha256(canonical(record)).hexdigest()


def link_of(record: dict[str, Any]) -> str:
    """What the next record names as `prev`: this record's `chain` (or, for a record from
    before the chain, the hash of its content)."""
    chain = record.get("chain")
    return chain if isinstance(chain, str) else chain_hash(record)


def draft(record: dict[str, Any]) -> bytes:
    """`record`'s canonical bytes with a stand-in `prev`: made before the journal's lock
    (a record JSON cannot hold fails here, before the file is touched), finished under it
    by `sealed_line` without encoding the record again."""
    return canonical({**record, "prev": _STAND_IN_PREV})


def sealed_line(record: dict[str, Any], prev: str, seq: int, drafted: bytes | None = None) -> bytes:
    """Give `record` its place (in place: `prev`, `chain`, `seq`) and return its journal
    line: the canonical bytes `chain` is the hash of, then `seq` and `chain`. `drafted`:
    `draft(record)`, made before `prev` was known."""
    real = b'"prev":' + json.dumps(prev, ensure_ascii=False).encode("utf-8")
    body = drafted.replace(_STAND_IN, real) if drafted is not None and drafted.count(_STAND_IN) == 1 else None
    record.pop("chain", None)
    record["prev"] = prev
    if body is None:
        body = canonical(record)
    record["chain"] = sha256(body).hexdigest()
    record["seq"] = seq
    return body[:-1] + b',"seq":%d,"chain":"%s"}\n' % (seq, record["chain"].encode("ascii"))


def seal(record: dict[str, Any], prev: str) -> dict[str, Any]:
    """Give `record` its place in the chain (in place; returns it)."""
    record.pop("chain", None)
    record["prev"] = prev
    record["chain"] = chain_hash(record)
    return record


def flaw(record: dict[str, Any], expected_prev: str | None) -> str | None:
    """Why a sealed record does not hold its place, or None. `expected_prev` is the link
    of the record before it (None: not known, only the record itself is checked)."""
    if record.get("chain") != chain_hash(record):
        return "it was changed after it was written (its hash does not match its content)"
    if expected_prev is not None and record.get("prev") != expected_prev:
        return "it does not follow the record before it (a record was removed, inserted, reordered or edited there)"
    return None
