"""The record of the last engine write of a file ledger: `<ledger>.last-write.json`.

It holds the revision, the content hash, the number of targets and the digest of their
names, the runbook's step names, the metric names and whether there was a budget. The
names themselves are `<ledger>.last-write.names.json`, written only when they change:
10,000 names in the record, written twice a step, cost a 10k step a fifth of its time.
A file that no longer matches the record was
edited by someone else; one that went backwards (a restored backup, an editor's stale
buffer, `git checkout`) or lost what the engine last wrote is refused until a human
says so, because an old file can hold an approval that was already used:

- fewer targets: `missing` (resolved with `handoff check --accept-removal`);
- a lower revision, or a lost runbook step, metric or budget: `rollback` (resolved
  with `handoff check --accept-rollback`).
"""

from __future__ import annotations

import json

from engine.audit.journal import Journal, head_gone, journal_head, journal_path
from engine.host.digests import content_digest
from engine.ledger.model import Ledger
from engine.store.atomic import atomic_write, file_identity
from engine.store.sidecar import read_record, remember

NAMES = ".last-write.names.json"  # beside the ledger: {"v": 1, "lists": {digest: [name, ...]}}

_JOURNALS: dict[str, Journal] = {}  # per ledger: the journal's index is read incrementally

def journal_revision(ledger_path: str) -> int:
    """The highest revision the ledger's journal records (0 if none): a file below it went
    back in time, whatever happened to the last-write record (deleted, torn, edited or a
    symlink). Cheap: the journal's index and at most its last 64 KiB."""
    journal = _JOURNALS.get(ledger_path)
    if journal is None:
        journal = _JOURNALS[ledger_path] = Journal(journal_path(ledger_path), read_only=True)
    try:
        return journal.highest_revision()
    except OSError:
        return 0  # an unreadable journal is reported where it is read (`handoff journal`, `check`)

def behind_journal(ledger: Ledger, ledger_path: str) -> list[str]:
    """The rollback sentence for a ledger whose revision is below its journal's highest."""
    highest = journal_revision(ledger_path)
    if ledger.revision < highest:
        return [f"its revision is {ledger.revision}, lower than the highest revision its journal records ({highest})"]
    return []

def _head(ledger_path: str, previous: dict | None) -> dict | None:
    """The journal head this write names: the journal's last record now, unless the head
    the previous write named is gone and no `chain_break` has noted it yet (then that one
    stays named, so the next append and every verify still see the loss)."""
    path = journal_path(ledger_path)
    old = (previous or {}).get("journal_head")
    if isinstance(old, dict) and head_gone(path, old) and Journal(path, read_only=True).witness("chain_break", missing_head=old["seq"]) is None:
        return old
    return journal_head(path)


def write_record(path: str, ledger_path: str, ledger: Ledger, key: str, previous: dict | None = None, *,
                 history: int | None = None) -> None:
    """Record a write the engine just made (atomically; under the writers' lock), naming
    the journal's head (`handoff journal --verify` checks it is still there); `previous`
    is the record this one replaces; `history` is the revision whose `ledger_write`
    record the journal holds (engine.store.history), so the next write can journal a diff."""
    names = list(ledger.targets)
    digest, text = _names(names)
    kept = file_identity(ledger_path + NAMES)
    if (previous or {}).get("names_digest") != digest or not _holds(ledger_path, digest, previous, kept):
        kept = _keep_names(ledger_path, digest, text, previous)  # first: a crash before the record leaves both lists
    body = {
        "revision": ledger.revision,
        "hash": key,
        "count": len(names),
        "names_digest": digest,
        "names_file": list(kept or ()),  # the list as written: read again only if it changed
        # An engine from before the list moved out reads no `names` here and would never see a
        # target go missing: this step name, in no runbook, makes it call any hand edit a
        # rollback instead (fail closed). This engine leaves it out (`regressions`).
        "steps": [s.name for s in ledger.steps()] + [OLDER_ENGINES],
        "metrics": sorted(ledger.metrics),
        "budget": ledger.budget is not None,
        "journal_head": _head(ledger_path, previous),
        "history": history,
    }
    if isinstance(body["journal_head"], dict):
        body["journal_head"] = dict(body["journal_head"])  # the record's own: the journal's object is not kept
    raw = json.dumps(body).encode("utf-8")
    atomic_write(path, raw, durable=False, sidecar_of=ledger_path)
    remember(path, raw, body)  # built here of JSON's own types: read back, these bytes say the same


_NAMES: tuple[list[str], str, str] | None = None  # the last target-name list, its digest and its JSON
_HELD: dict[str, tuple[tuple[int, int, int] | None, str]] = {}  # ledger -> (identity of its names file, a digest seen in it)
OLDER_ENGINES = "(the target names are in .last-write.names.json: upgrade handoff to read this ledger)"


def _holds(ledger_path: str, digest: str, previous: dict | None, identity: tuple[int, int, int] | None) -> bool:
    """Does the names file beside the ledger (`identity`: its inode, size and modification
    time) hold the list of `digest`? (Gone, torn or edited, it is written again by the next
    write: a fleet whose names never change would otherwise be left with only the count for
    good.) Read only when it is not the file last seen by this process or named by the
    previous record."""
    if identity is not None and (_HELD.get(ledger_path) == (identity, digest)
                                 or (previous or {}).get("names_file") == list(identity)):
        return True
    if last_names({"names_digest": digest}, ledger_path) is None:
        return False
    _HELD[ledger_path] = (identity, digest)
    return True


def _names(names: list[str]) -> tuple[str, str]:
    """(digest, JSON) of a target-name list, computed again only when the list differs
    from the last one (compared whole: 10,000 names are encoded once, not at each write)."""
    global _NAMES
    last = _NAMES
    if last is None or last[0] != names:
        text = json.dumps(names)
        last = _NAMES = (list(names), _digest(text), text)
    return last[1], last[2]


def _keep_names(ledger_path: str, digest: str, text: str, previous: dict | None) -> tuple[int, int, int] | None:
    """Write the names list beside the ledger, with the list the previous record names:
    that record stays the record until this write's own lands, and a reader finds its
    list either way. Returns the new file's identity."""
    lists = {digest: text}
    before = last_names(previous, ledger_path)
    if before is not None:
        before_text = json.dumps(before)
        lists.setdefault(_digest(before_text), before_text)
    raw = '{"v": 1, "lists": {' + ", ".join(json.dumps(d) + ": " + t for d, t in lists.items()) + "}}"
    atomic_write(ledger_path + NAMES, raw.encode("utf-8"), durable=False, sidecar_of=ledger_path)
    identity = file_identity(ledger_path + NAMES)
    _HELD[ledger_path] = (identity, digest)
    return identity


def _digest(names_json: str) -> str:
    """The digest a names list is known by: of its JSON (`json.dumps`), as the record names it."""
    return content_digest(names_json.encode("utf-8"))


def last_names(record: dict | None, ledger_path: str) -> list[str] | None:
    """The target names of the write `record` names, or None when they cannot be known
    (no record, or the list beside the ledger is gone, torn or edited)."""
    if not record:
        return None
    names = record.get("names")
    if isinstance(names, list):
        return [n for n in names if isinstance(n, str)]  # an older engine kept the list in the record
    digest = record.get("names_digest")
    kept = read_record(ledger_path + NAMES, ledger_path) if isinstance(digest, str) else None
    lists = kept.get("lists") if kept else None
    found = lists.get(digest) if isinstance(lists, dict) else None
    if not isinstance(found, list) or not all(isinstance(n, str) for n in found) or _digest(json.dumps(found)) != digest:
        return None
    return found


def mark_pending(path: str, ledger_path: str, previous: dict | None, key: str, *, absorbs_edit: bool = False) -> None:
    """Before the engine swaps in a file whose content hash is `key`: the record says so
    (`pending`). A crash after the swap and before `write_record` then leaves a file the
    next reader knows is the engine's own write, not a hand edit: without it, a kill -9 in
    that window (the journal and history appends, fsynced, sit there) made the next session
    stop on "targets were changed outside the engine". `absorbs_edit`: the write takes in a
    hand edit; a crash before its `external_edit` record leaves the next reader to diff it.
    `write_record` clears both."""
    body = dict(previous or {})
    body["pending"] = key
    body.pop("absorbs_edit", None)
    if absorbs_edit:
        body["absorbs_edit"] = True
    raw = json.dumps(body).encode("utf-8")
    atomic_write(path, raw, durable=False, sidecar_of=ledger_path)
    remember(path, raw, body)  # a record read from the file, and a hash: read back, these bytes say the same


def engine_wrote(record: dict | None, key: str) -> bool:
    """Is content `key` what the record says the engine last wrote (or was writing when it stopped)?"""
    return record is None or key in (record.get("hash"), record.get("pending"))


def regressions(ledger: Ledger, record: dict, ledger_path: str) -> tuple[list[str], list[str]]:
    """(targets missing, rollback sentences) of `ledger` against the last engine write."""
    names = last_names(record, ledger_path)
    missing = [n for n in names if n not in ledger.targets] if names is not None else []
    rollback: list[str] = []
    revision = record.get("revision")
    if isinstance(revision, int) and ledger.revision < revision:
        rollback.append(f"its revision is {ledger.revision}, lower than the engine's last write (revision {revision})")
    steps = {s.name for s in ledger.steps()}
    lost = [s for s in record.get("steps") or [] if s not in steps and s != OLDER_ENGINES]
    if lost:
        rollback.append(f"runbook step{'s' if len(lost) > 1 else ''} {', '.join(lost)} the engine last wrote "
                        f"{'are' if len(lost) > 1 else 'is'} gone")
    lost = [m for m in record.get("metrics") or [] if m not in ledger.metrics]
    if lost:
        rollback.append(f"metric{'s' if len(lost) > 1 else ''} {', '.join(lost)} the engine last wrote "
                        f"{'are' if len(lost) > 1 else 'is'} gone")
    count = record.get("count")
    if names is None and isinstance(count, int) and len(ledger.targets) < count:
        rollback.append(f"it has {len(ledger.targets)} targets, fewer than the {count} the engine last wrote, and the "
                        f"list of their names ({ledger_path + NAMES}) is gone or was edited")
    if record.get("budget") and ledger.budget is None:
        rollback.append("the budget the engine last wrote is gone")
    return missing, rollback
