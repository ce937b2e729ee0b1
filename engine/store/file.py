"""The file store: a YAML ledger on disk, safe under crashes and concurrent writers.

- Reads are cached by content hash; a new process takes what each target's exact text
  parsed to from the per-user parse cache (engine.store.parse_cache), and everything
  else from the file itself.
- Every change is a transaction under the writers' lock (engine.store.filelock, on a
  sidecar, never the ledger itself, which is replaced on every write; bounded waits
  that name the holder). The file is re-read under the lock and swapped in with a
  compare-and-swap (engine.store.atomic): a human's save in vim in between is
  detected and the change is re-applied on top of what they wrote, never over it.
- A file that does not parse is never overwritten, even when this store read a good
  copy a moment ago. A file that lost targets, a runbook step, a metric or its budget
  since the engine last wrote it, or whose revision went backwards, is refused until a
  human says so (engine.store.record): an old file can hold an approval already used.
- `fence` lets a session spawn a step's process only while it provably still holds the
  ledger: under the lock, after re-reading the lease and the intent token.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # asyncio costs a CLI call 15 ms; only `watch` needs it, and only for a type
    import asyncio

from engine.codec.document import Parsed, parse_document
from engine.codec.splice import splice
from engine.errors import HandoffError, LedgerInvalid, ReadOnly, Refused, WriteFailed, os_error_text
from engine.host import failpoints
from engine.host.digests import content_digest as digest
from engine.host.files import read_capped
from engine.lease.heartbeat import Heartbeat
from engine.ledger.model import Ledger, Target
from engine.ledger.sealed import seal
from engine.store import highwater, history, outside, parse_cache, settle
from engine.store.atomic import atomic_write, real_path
from engine.store.base import Snapshot, WatchEvent
from engine.store.bulk import first_read
from engine.store.convert import change, check_states, to_ledger, to_ledger_reusing
from engine.store.cow import CowTargets, cow_ledger, written
from engine.store.filelock import FileLock
from engine.store.ledger_file import open_ledger_file
from engine.store.record import (
    NAMES,
    behind_journal,
    engine_wrote,
    journal_revision,
    mark_pending,
    regressions,
    write_record,
)
from engine.store.sidecar import SidecarRefused, read_record

T = TypeVar("T")
MAX_BYTES = 64 * 1024 * 1024
_CAS_RETRIES = 8


class _Parse:
    """A parsed document kept by hash: the codec's Parsed (data and text blocks) and
    the Ledger validated from it."""

    __slots__ = ("doc", "data", "lines", "targets", "ledger", "from_disk_cache")

    def known(self) -> dict[str, tuple[str, dict]]:
        """target text -> (name, data): what the next parse of this ledger need not redo."""
        return {text: (name, self.targets[name]) for name, text in self.lines.items() if name in self.targets}

    def __init__(self, doc: Parsed, ledger=None):
        self.doc = doc
        self.data = doc.data
        self.lines = doc.lines
        self.targets = doc.data.get("targets") or {}
        self.ledger = ledger  # validated once; shared by readers, never mutated
        self.from_disk_cache = False  # targets taken from the per-user parse cache


def as_written(targets: dict[str, Target], doc: Parsed) -> dict[str, Target]:
    """`targets` in the order the written document holds them. A target taken out and put
    back in one transaction stands last in the transaction's dict, and a dict given in
    another order has its own; the file keeps every name that stayed where it was
    (engine.codec.splice). The snapshot a write leaves for this process is what the file
    says, as another process reads it: a session must not propose in an order no one
    else sees."""
    in_file = doc.data.get("targets") if isinstance(doc.data, dict) else None
    if not isinstance(in_file, dict) or len(in_file) != len(targets) or list(in_file) == list(targets):
        return targets
    if any(name not in targets for name in in_file):
        return targets  # not the same names: nothing to put in order (the read-back check stands guard)
    return {name: targets[name] for name in in_file}


def _target_alone(text: str, name: str, path: str) -> object:
    """What a target's text (its lines in the file) says alone; None if it says nothing
    readable (then it is not what a cache entry said of it)."""
    try:
        parsed = parse_document("targets:\n" + text + "\n", path)
    except LedgerInvalid:
        return None
    targets = parsed.data.get("targets") if isinstance(parsed.data, dict) else None
    return targets.get(name) if isinstance(targets, dict) else None


def _by_line(lines: dict[str, str], targets: dict[str, Target]) -> dict[str, Target]:
    """line text -> validated target, for each target the document has a line of (at C speed
    when every name with a line is a target, as in any ledger read whole)."""
    if lines.keys() <= targets.keys():
        return dict(zip(lines.values(), map(targets.__getitem__, lines), strict=True))
    return {line: targets[name] for name, line in lines.items() if name in targets}


def sidecar(path: str, suffix: str) -> str:
    """`ledger.yaml` -> `ledger.yaml<suffix>` beside the real file."""
    return real_path(path) + suffix


_HASH_BESIDE = 256 * 1024  # below this a thread costs more than the hash it would overlap


def _hash_beside(raw: bytes) -> Callable[[], str]:
    """`digest(raw)`, started now in a thread of its own for a big file (a 10,000-target
    ledger takes ~0.8 ms to hash, with the GIL let go): call the result to wait for it."""
    if len(raw) < _HASH_BESIDE:
        key = digest(raw)
        return lambda: key
    found: list[str] = []
    worker = threading.Thread(target=lambda: found.append(digest(raw)), name="handoff-hash", daemon=True)
    try:
        worker.start()
    except RuntimeError:  # no thread to be had (a container's process limit): hash here
        key = digest(raw)
        return lambda: key

    def result() -> str:
        worker.join()
        if not found:  # the thread failed (out of memory): hash here, where the error is raised
            found.append(digest(raw))
        return found[0]
    return result


def too_big(size: int, path: str) -> LedgerInvalid:
    """The error for a file over MAX_BYTES, with its real size."""
    shown = f"{size / (1024 * 1024 * 1024):.1f} GiB" if size >= 1024 ** 3 else f"{size / (1024 * 1024):.0f} MiB"
    return LedgerInvalid(
        f"is {shown}; ledgers over {MAX_BYTES // (1024 * 1024)} MiB are refused (keep history in the journal, not the ledger)",
        path=path,
    )


def decode(raw: bytes, path: str) -> str:
    """UTF-8 or a clear error at the first bad byte."""
    if len(raw) > MAX_BYTES:
        raise too_big(len(raw), path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        before = raw[: err.start]
        line = before.count(b"\n") + 1
        column = err.start - (before.rfind(b"\n") + 1) + 1
        raise LedgerInvalid(
            f"is not UTF-8 (byte 0x{raw[err.start]:02x}); save the file as UTF-8",
            path=path,
            line=line,
            column=column,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        at = text.index("\x00")
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1) + 1
        raise LedgerInvalid(
            "contains a NUL byte; this is not a text file (restore it from the last good copy)",
            path=path,
            line=line,
            column=column,
        )
    return text


_BOM = b"\xef\xbb\xbf"  # some Windows editors write it; decode() reads past it, writes keep it


_REVISION_LINE = re.compile(rb"^revision:[ \t]*([0-9]+)[ \t]*(?:#.*)?$", re.MULTILINE)


def _revision_of(raw: bytes) -> int | None:
    """The top-level `revision:` of a file's bytes, read without parsing the file."""
    found = _REVISION_LINE.search(raw)
    return int(found.group(1)) if found else None


class FileStore:
    """A ledger in a YAML file."""

    def __init__(self, path: str, *, read_only: bool = False) -> None:
        self.location = path
        self.path = path
        self.real = real_path(path)  # the file opened: its lock, records and journals are beside it
        self.read_only = read_only
        self._cache: dict[str, _Parse] = {}
        # (content hash, line text -> validated target) of the last read or write: one pair,
        # so a reader and a writer in two threads never leave a map beside another's hash.
        self._known: tuple[str | None, dict[str, Target]] = (None, {})
        self._digested: tuple[bytes, str] | None = None  # the last bytes hashed and their hash
        self.lock_path = sidecar(path, ".lock")
        self.record_path = sidecar(path, ".last-write.json")
        self.filelock = FileLock(self.lock_path, real_path(path))
        self.saw_external_edit = False  # did the last transaction start from a hand edit?
        self.history_lost: str | None = None  # why the last write's history record is missing (None: it is there)
        self.unsettled: str | None = None  # a file's write is in or not: never unknown (PostgreSQL's may be)
        self.journaled_external_edit = False  # ... and did it journal that edit itself?
        self.patience = 0.0  # no database to wait out (engine.store.base.Store)
        self._disk_cache = True  # may a read take targets from the per-user parse cache? (`read_file_alone`)
        self._history: history.History | None = None  # the history journal each write's `ledger_write` record goes to (opened once)

    # -- reading -----------------------------------------------------------------

    def _raw(self) -> bytes:
        self._where_opened()
        # Only a regular file, opened without blocking (a FIFO would hang every command).
        with os.fdopen(open_ledger_file(self.path), "rb") as fh:
            raw = read_capped(fh, MAX_BYTES)
            if len(raw) > MAX_BYTES:  # only MAX_BYTES + 1 were read: say how big it really is
                raise too_big(os.fstat(fh.fileno()).st_size, self.path)
            return raw

    def _where_opened(self) -> None:
        """The path still leads to the file this store opened. A folder link switched under a
        long-running process (`current -> releases/2`) made it read and write the other folder's
        ledger while its lock, last-write record, history, journal and `{ledger_dir}` stayed with
        the first: refused, as a file that cannot be read."""
        now = real_path(self.path)
        if now != self.real:
            raise LedgerInvalid(f"now leads to {now}, not to {self.real} that this process opened (a folder link was "
                                "switched?); nothing acts on it: open it again", path=self.path)

    def _digest(self, raw: bytes) -> str:
        """`digest(raw)`, remembered for the last bytes hashed: the same bytes (compared
        whole) are the same content, so a re-read of an unchanged file, or of the file
        this store just wrote, does not hash 1.6 MB again."""
        last = self._digested
        if last is not None and last[0] == raw:
            return last[1]
        key = digest(raw)
        self._digested = (raw, key)
        return key

    def _parse(self, raw: bytes) -> tuple[str, _Parse, str]:
        key = self._digest(raw)
        hit = self._cache.get(key)
        text = ""
        if hit is None:
            text = decode(raw, self.path)
            previous = next(iter(self._cache.values()), None)
            from_disk = previous is None
            known = previous.known() if previous else parse_cache.load(self.real) if self._disk_cache else {}
            try:
                parsed = parse_document(text, self.path, known)
            except LedgerInvalid:
                if not from_disk or not known:
                    raise
                parsed, from_disk = parse_document(text, self.path, None), False  # a bad cache is no error of the file's
                parse_cache.forget(self.real)
            if not isinstance(parsed.data, dict):
                raise LedgerInvalid("the ledger must be a mapping (task:, targets:, ...)", path=self.path, line=1, column=1)
            hit = _Parse(parsed)
            hit.from_disk_cache = from_disk and bool(known)
            if previous is None and isinstance(hit.targets, dict):  # this process's first read: the next one's is quick
                parse_cache.after_read(self.real, hit.lines, hit.targets, lambda: parsed.numbered,
                                       known if from_disk else {})
        self._cache = {key: hit}
        return key, hit, text

    def _snapshot(self, raw: bytes, _again: bool = True, _record: Any = False) -> tuple[Snapshot, _Parse]:
        """Read `raw`. Readers share one validated Ledger per content hash: it must never
        be changed (a transaction works on a copy). `_record` is the write record read
        together with `raw` (False: read it now)."""
        with first_read():  # a process's first read: no cyclic collections while it builds (engine.store.bulk)
            key, parsed, text = self._parse(raw)
            if parsed.ledger is None:
                text = text or raw.decode("utf-8", "replace")
                try:
                    ledger = to_ledger_reusing(parsed.data, self.path, text, parsed.lines, self._known[1])
                except LedgerInvalid:
                    if not parsed.from_disk_cache:
                        raise
                    # What the per-user cache said does not validate: it is ignored, never reported.
                    parse_cache.forget(self.real)
                    parsed = _Parse(parse_document(text, self.path, None))
                    self._cache = {key: parsed}
                    ledger = to_ledger(parsed.data, self.path, text)
                parsed.ledger = ledger
                seal(ledger.targets)  # shared by readers from now on: what is derived may be kept
                self._known = (key, _by_line(parsed.lines, ledger.targets))
            else:
                ledger = parsed.ledger
        snap = Snapshot(ledger, key)
        record = self.last_write() if _record is False else _record
        if not engine_wrote(record, key) and _again and not self.filelock.holds():
            # A hand edit, or a writer that moved on during a long parse: read the file and
            # its record again as one pair, and judge that file against that record only. A
            # record read after parsing a newer file may be newer still (a false rollback).
            now, record = self._file_and_record()
            if now != raw:
                return self._snapshot(now, _again=False, _record=record)
        behind = behind_journal(ledger, self.real)  # the last-write record may be gone or forged
        # The witness outside the folder: a folder restored whole matches its own record.
        late = highwater.behind(highwater.identity(ledger, self.real), ledger.revision)
        if (behind or late) and not self.filelock.holds():
            # The journal and the mark are written after the file: a writer that moved on
            # during a long parse makes the file parsed look behind them. That file was
            # superseded, not restored, when the file on disk now carries a higher revision.
            newer = _revision_of(self._raw())
            if newer is not None and newer > ledger.revision:
                behind, late = [], None
        # No record (deleted, or never written) of a ledger the engine has written before: its
        # content is not known to be the engine's, and what the engine last wrote is taken from
        # the kept fields or the journal's history. A write killed after its swap that took in a
        # hand edit (`absorbs_edit`) leaves that edit to the next reader to diff, journal and flag.
        written = outside.last_written(self.real) if record is None else None
        past = record is None and (written is not None or journal_revision(self.real) > 0)
        absorbed = record is not None and key == record.get("pending") and bool(record.get("absorbs_edit"))
        if not engine_wrote(record, key) or behind or past or absorbed:
            snap.external_edit = True
            snap.missing, snap.rollback = regressions(ledger, record, self.real) if record and not engine_wrote(record, key) else ([], [])
            count = None
            if past:  # against what the kept fields or the history say the engine last wrote
                count, snap.missing = len(written or {}), [n for n in written or {} if n not in ledger.targets]
            if behind and not any(s.startswith("its revision is") for s in snap.rollback):
                snap.rollback += behind
            if snap.missing:
                if count is None and record:  # an older engine's record: its list
                    count = record.get("count", len(record.get("names") or []))
                snap.warnings.append(
                    f"{self.path} has {len(ledger.targets)} targets but the engine last wrote "
                    f"{count} (revision {(record or {}).get('revision', ledger.revision)}); missing: "
                    f"{', '.join(snap.missing[:10])}{' ...' if len(snap.missing) > 10 else ''}. "
                    "The file may be truncated: restore it, or run "
                    f"`handoff check {self.path} --accept-removal` if they were removed on purpose."
                )
            if snap.rollback:
                snap.warnings.append(
                    f"{self.path} went back in time: {'; '.join(snap.rollback)}. It may be an old copy (a backup, "
                    "an editor's stale buffer, git checkout) holding approvals already used; nothing acts on it. "
                    f"Restore the newest file, or run `handoff check {self.path} --accept-rollback` if this is meant."
                )
        if late and not snap.rollback:
            snap.rollback.append(late)
            snap.warnings.append(
                f"{self.path} went back in time: {late}. It may hold approvals already used; nothing acts on it. "
                f"Restore the newest copy, or run `handoff check {self.path} --accept-rollback` if this is meant.")
        return snap, parsed

    def read_file_alone(self) -> None:
        """From now on, take nothing from the per-user parse cache: read the file itself.
        The cache is a file of the process's user, in the folder its environment names, so
        an agent's user can write its own: an entry mapping a target's very text to other
        data (a failed target `queued`, a touched one free) would be believed. A process
        that drives the ledger (engine.ledger.access.open_writer) decides on every target,
        so it reads the file alone from its start; its first read writes the cache again."""
        self._disk_cache = False
        if any(p.from_disk_cache for p in self._cache.values()):
            self._cache, self._known = {}, (None, {})

    def _as_the_file_says(self, parsed: _Parse, names: set[str] | None) -> bool:
        """Does the file's own text say of each target a write changes (`names`; None: all)
        what the per-user parse cache said? A write never builds on the cache's word: the
        engine would write a forged target's data back as its own, with no trace."""
        if not parsed.from_disk_cache:
            return True
        for name in parsed.targets if names is None else names:
            text = parsed.lines.get(name)
            if text is not None and not parse_cache.same_data(parsed.targets.get(name), _target_alone(text, name, self.path)):
                return False
        return True

    def _file_and_record(self) -> tuple[bytes, dict[str, Any] | None]:
        """The file and the write record that goes with it: under the shared lock (writers
        hold the lock while they write both), or, when it cannot be had, the record read
        before and after the file agreeing."""
        with self.filelock.shared() as paired:
            if paired:
                return self._raw(), self.last_write()
        for _ in range(_CAS_RETRIES):
            before = self.last_write()
            raw = self._raw()
            after = self.last_write()
            if before == after:
                break
        return raw, after

    def snapshot(self) -> Snapshot:
        """The ledger as it is on disk now."""
        return self._settled(self._raw())[1][0]

    def _settled(self, raw: bytes) -> tuple[bytes, tuple[Snapshot, _Parse]]:
        """`_snapshot(raw)`, read again while a save in place is under way (engine.store.settle)."""
        return settle.settled(raw, self._snapshot, self._raw)

    def read(self) -> Ledger:
        return self.snapshot().ledger

    def last_write(self) -> dict[str, Any] | None:
        """The record of the last engine write, or None (never written, or torn)."""
        return read_record(self.record_path, self.real)

    def export_text(self) -> str | None:
        """None: the ledger's text is the file at `path` (engine.checks.analyse reads it)."""
        return None

    # -- writing -----------------------------------------------------------------

    @property
    def on_lock_wait(self) -> Callable[[str], bool] | None:
        """Called with the holder's description when a lock wait passes its timeout;
        returning True keeps waiting (a running session does)."""
        return self.filelock.on_wait

    @on_lock_wait.setter
    def on_lock_wait(self, fn: Callable[[str], bool] | None) -> None:
        self.filelock.on_wait = fn

    @contextmanager
    def lock(self) -> Iterator[int]:
        """The writers' lock (bounded wait, re-entrant within a thread)."""
        if self.read_only:
            raise ReadOnly("this view is read-only; nothing can be changed from it")
        with self.filelock.hold() as fd:
            yield fd

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False, accept_rollback: bool = False,
                 patient: bool = True) -> tuple[T, int]:
        """Apply `fn` to the freshest ledger and write the result; returns (fn's result, revision).
        (`patient` is the database stores': a file has no outage to wait out.)

        `fn` may be called more than once (if the file changes underneath) and must
        only change the ledger it is given. Raising inside `fn` writes nothing.
        """
        with self.lock():
            return self._transact_locked(fn, accept_shrink=accept_shrink, accept_rollback=accept_rollback)

    def _refuse_regressions(self, snap: Snapshot, accept_shrink: bool, accept_rollback: bool) -> None:
        if snap.missing and not accept_shrink:
            raise Refused(snap.warnings[0], title="Ledger shrank")
        if snap.rollback and not accept_rollback:
            raise Refused(snap.warnings[-1], title="Ledger went back in time")

    def _transact_locked(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False, accept_rollback: bool = False) -> tuple[T, int]:
        for beside in (self.record_path, self.real + NAMES):  # refused before the ledger is touched, not after
            if os.path.islink(beside):
                raise SidecarRefused(f"{beside} is a symlink; the engine never follows one beside a ledger: "
                                     "remove it (nothing was changed)")
        raw = self._raw()
        for _ in range(_CAS_RETRIES):
            # Parsed afresh from the bytes on disk every time: a file that does not parse
            # raises here, and is never written over from a copy read earlier.
            raw, (snap, parsed) = self._settled(raw)
            self._refuse_regressions(snap, accept_shrink, accept_rollback)
            record = self.last_write()
            # Only what the change touched is written again; every other line of the
            # file (the engine's or a human's) keeps its text.
            ledger = cow_ledger(snap.ledger)
            # A hand edit is diffed, journaled after the write, and what no step would do is flagged.
            edit = outside.changes(self.real, snap.ledger) if snap.external_edit else None
            # A person accepting a rollback or a removal has looked at the file: journaled, not flagged
            # (a revived approval is still refused by the journal's witness).
            flagged = outside.flag(ledger, edit) if edit and not (accept_rollback or accept_shrink) else []
            result = fn(ledger)
            floor = record.get("revision") if record and isinstance(record.get("revision"), int) else 0
            mark = highwater.identity(ledger, self.real)
            floor = max(floor, highwater.read_mark(mark)["revision"])  # an accepted rollback climbs above the mark
            floor = max(floor, journal_revision(self.real))
            ledger.revision = max(ledger.revision, _rev(parsed.data), floor) + 1  # never backwards
            targets = ledger.targets
            try:
                ledger.targets, names = written(targets)
                if not self._as_the_file_says(parsed, names):
                    parse_cache.forget(self.real)  # the first read after this writes it again
                    self.read_file_alone()
                    continue  # the change again, on what the file says
                check_states(snap.ledger, ledger, names)
                spent = highwater.newly_spent(snap.ledger, ledger, ledger.targets if names is None else names)
                used = highwater.already_spent(mark, spent)
                if used:
                    raise Refused(used, title="Approval already used")
                doc = splice(parsed.doc, change(snap.ledger, ledger, names))
                if not isinstance(targets, CowTargets) or targets.reordered():
                    ledger.targets = as_written(ledger.targets, doc)
                out = (_BOM if raw.startswith(_BOM) else b"") + doc.text.encode("utf-8")  # a BOM stays
            except ValueError as err:  # an unknown state, text YAML cannot hold, a failed read-back
                raise Refused(str(err), title="Cannot write that") from None
            # Compare-and-swap at the swap itself: if someone saved the file since we
            # read it, their file stays and the change is made again on top of it.
            # The new content's hash is worked out while its temp copy is written and fsynced
            # (BLAKE2b lets the GIL go over a big buffer); the record names it before the swap.
            hashed = _hash_beside(out)
            try:
                theirs = atomic_write(self.path, out, expect=raw,
                                  before_swap=partial(self._mark_pending, record, hashed, snap.external_edit))
            except OSError as err:  # disk full, a read-only mount: the old file stands
                raise WriteFailed(f"cannot write {self.path}: {os_error_text(err)}; nothing was changed") from None
            new_key = hashed()
            self._digested = (out, new_key)
            if theirs is not None:
                raw = self._raw()
                continue
            self.saw_external_edit = snap.external_edit
            self._cache = {new_key: _Parse(doc, ledger)}
            seal(ledger.targets, targets)  # what was known of the snapshot it came from carries over
            self._known = (new_key, self._known_after(snap.digest, parsed, doc, ledger, names))
            failpoints.reached("after-ledger-swap")  # tests: killed before the journal and the record
            self.history_lost = self._journal_write(ledger, parsed.data, doc.data, names, snap, record)
            kept = self.history_lost is None
            try:
                write_record(self.record_path, self.real, ledger, new_key, record,
                             history=ledger.revision if kept else None)
            except (OSError, SidecarRefused):
                pass  # the ledger is written; an older record only makes the next reader call it a hand edit
            try:
                highwater.raise_mark(mark, ledger.revision, spent)
            except OSError:
                pass  # the ledger is written; the witnesses beside it still stand
            try:
                outside.save_fields(self.real, ledger, new_key, base=snap.digest, names=names)
            except (OSError, SidecarRefused):
                pass  # as for the record: the next hand edit is then journaled without its diff
            self.journaled_external_edit = bool(edit)
            if edit:
                try:
                    outside.journal_edit(self.real, ledger, edit, flagged, ledger.revision,
                                         outside.who_edited(self.real))
                except HandoffError:
                    pass  # the ledger is written; the journal notes the lost record as a gap at its next append
            parse_cache.save(self.real, doc.lines, doc.data["targets"], doc.numbered,
                             changed=None if names is None else (parsed.lines, names))
            return result, ledger.revision
        raise Refused(
            f"{self.path} kept changing while we tried to write it ({_CAS_RETRIES} tries); "
            "is an editor or script rewriting it in a loop?",
            title="Ledger busy",
        )

    def _mark_pending(self, record: dict[str, Any] | None, hashed: Callable[[], str], absorbs: bool) -> None:
        """Just before the swap: the record names the content going in (engine.store.record.mark_pending),
        and whether it takes in a hand edit its journal record has yet to describe."""
        try:
            mark_pending(self.record_path, self.real, record, hashed(), absorbs_edit=absorbs)
        except OSError:
            pass  # no marker: a crash before the record is written makes the next reader call it a hand edit

    def _known_after(self, base: str, parsed: _Parse, doc: Parsed, ledger: Ledger, names: set[str] | None) -> dict[str, Target]:
        """line text -> target for the document just written: what was known of the
        snapshot it was spliced on (content `base`), with only the `names` the change
        touched looked at again; every other target's line and object are that snapshot's.
        A full look when the change's names are not known or `_known` is of other content."""
        of, known = self._known
        if names is None or of != base:
            return {line: ledger.targets[name] for name, line in doc.lines.items() if name in ledger.targets}
        # Changed in place, not copied (10,000 entries a write): any line text's target is
        # right for whatever content holds that text, so a reader using this map meanwhile
        # reuses what it may, and validates the rest.
        for name in names:
            old = parsed.lines.get(name)
            if old is not None:
                known.pop(old, None)
        for name in names:
            line = doc.lines.get(name)
            if line is not None and name in ledger.targets:
                known[line] = ledger.targets[name]
        return known

    def _journal_write(self, ledger: Ledger, before: dict, after: dict, names: set[str] | None, snap: Snapshot,
                       record: dict[str, Any] | None) -> str | None:
        """This write's `ledger_write` record: a diff on the revision read when the journal
        holds that one (the last write was ours and journaled), else the whole ledger. Why it
        could not be written, or None."""
        ours = record is not None and record.get("hash") == snap.digest and record.get("history") == snap.ledger.revision
        if self._history is None:
            self._history = history.file_journal(self.path)
        return history.record(self._history, ledger, before, after, names, snap.ledger.revision if ours else None)

    def fence(self, check: Callable[[Ledger], None], spawn: Callable[[], T], *,
              first: Callable[[], None] | None = None) -> T:
        """Spawn only while the caller provably still holds the ledger: under the writers'
        lock, read the ledger as it is on disk now and let `check` refuse (it raises), call
        `first()` (a session journals the step's start), then `spawn()` before the lock is
        let go. Returns what `spawn` returned. Nothing is written to the ledger: the intent
        the spawn carries out is on disk already (a session notes the pid later, if the step
        runs long enough to be looked for: engine.session.steps). A file lock is held until
        this process lets it go: nothing can take it between the check and the spawn."""
        with self.lock():
            snap = self._settled(self._raw())[1][0]
            self._refuse_regressions(snap, False, False)
            check(snap.ledger)
            if first is not None:
                first()
            return spawn()

    def heartbeat(self) -> Heartbeat:
        """The lease holder's heartbeat: the `<ledger>.heartbeat` sidecar."""
        return Heartbeat(sidecar(self.path, ".heartbeat"), self.real)

    def open_history(self):
        """The history journal beside this ledger (engine.store.history), read-only."""
        return history.file_journal(self.path, read_only=True)

    def open_journal(self, *, read_only: bool = False):
        """The journal beside this ledger (`<ledger>.journal.jsonl`)."""
        from engine.audit.journal import Journal, journal_path

        return Journal(journal_path(self.path), ledger=self.path, read_only=read_only)

    # -- watching ----------------------------------------------------------------

    async def watch(self, stop_event: asyncio.Event | None = None, debounce_ms: int = 50) -> AsyncIterator[WatchEvent]:
        """Yield a Snapshot whenever the ledger's content changes, or the LedgerInvalid
        error while it does not parse. Watches the parent folder: an atomic replace or an
        editor's save swaps the file's inode, which a watch on the file itself would miss."""
        from watchfiles import awatch  # imported here: `handoff status` must not pay for it

        target = self.real
        folder, name = os.path.split(target)
        last: str | None = None
        try:
            last = digest(self._raw())
        except LedgerInvalid:
            last = None

        def only_ledger(_change, changed_path: str) -> bool:
            return os.path.basename(changed_path) == name

        async for _changes in awatch(
            folder or ".",
            watch_filter=only_ledger,
            debounce=debounce_ms,
            step=10,
            recursive=False,
            stop_event=stop_event,
        ):
            try:
                raw = self._raw()
            except LedgerInvalid as err:
                yield err
                continue
            key = digest(raw)
            if key == last:
                continue
            last = key
            try:
                yield self._snapshot(raw)[0]
            except LedgerInvalid as err:
                yield err


def _rev(data: dict) -> int:
    value = data.get("revision")
    return value if isinstance(value, int) else 0
