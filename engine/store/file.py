"""The file store: a YAML ledger on disk, safe under crashes and concurrent writers.

- Reads are cached by content hash, so re-reading a file the engine just wrote costs a
  hash and a validation, and the fast reader handles the engine's own layout.
- Every change is a transaction under an exclusive lock on a sidecar lock file (never
  the ledger itself, which is replaced on every write). The file is re-read under the
  lock; just before the rename its hash is checked again, so a human's save in vim in
  between is detected: the change is re-applied to what they wrote, never over it.
- A file that does not parse is never overwritten. A file with fewer targets than the
  engine last wrote (a truncated file usually still parses) is reported, and no
  change is written until a human says the removal was meant.
- The lock file's content is the record of the last engine write (revision, hash,
  target names), which is how external edits and shrinkage are noticed.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
from contextlib import contextmanager
from typing import Any, AsyncIterator, Callable, Iterator, TypeVar

from engine.codec import emit_document, parse_document
from engine.errors import LedgerInvalid, ReadOnly, Refused, WriteFailed, os_error_text
from engine.model import Ledger, Target
from engine.store.atomic import atomic_write, real_path
from engine.store.base import Snapshot, WatchEvent
from engine.store.cow import CowTargets, cow_ledger
from engine.store.sidecar import open_sidecar
from engine.store.convert import to_data, to_ledger, to_ledger_reusing

T = TypeVar("T")
MAX_BYTES = 64 * 1024 * 1024
_CAS_RETRIES = 8


class _Parse:
    """A parsed document kept by hash: its data, header and per-target line text."""

    __slots__ = ("data", "header", "lines", "targets", "ledger")

    def known(self) -> dict[str, tuple[str, dict]]:
        """target text -> (name, data): what the next parse of this ledger need not redo."""
        return {text: (name, self.targets[name]) for name, text in self.lines.items() if name in self.targets}

    def __init__(self, data, header, lines, ledger=None):
        self.data = data
        self.header = header
        self.lines = lines
        self.targets = data.get("targets") or {}
        self.ledger = ledger  # validated once; shared by readers, never mutated


def sidecar(path: str, suffix: str) -> str:
    """`ledger.yaml` -> `ledger.yaml<suffix>` beside the real file."""
    return real_path(path) + suffix


def digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


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


class FileStore:
    """A ledger in a YAML file."""

    def __init__(self, path: str, *, read_only: bool = False) -> None:
        self.location = path
        self.path = path
        self.read_only = read_only
        self._cache: dict[str, _Parse] = {}
        self._known: dict[str, Target] = {}  # line text -> validated target, from the last read
        self.lock_path = sidecar(path, ".lock")
        self.parse_cache_path = sidecar(path, ".cache.json")
        self.saw_external_edit = False  # did the last transaction start from a hand edit?

    # -- reading -----------------------------------------------------------------

    def _raw(self) -> bytes:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(MAX_BYTES + 1)
                if len(raw) > MAX_BYTES:  # only MAX_BYTES + 1 were read: say how big it really is
                    raise too_big(os.fstat(fh.fileno()).st_size, self.path)
                return raw
        except FileNotFoundError:
            raise LedgerInvalid("no such ledger file; check the path", path=self.path) from None
        except IsADirectoryError:
            raise LedgerInvalid("is a folder, not a ledger file", path=self.path) from None
        except PermissionError:
            raise LedgerInvalid("cannot be read (permission denied)", path=self.path) from None

    def _parse(self, raw: bytes) -> tuple[str, _Parse, str]:
        key = digest(raw)
        hit = self._cache.get(key)
        text = ""
        if hit is None:
            hit = self._read_sidecar(key)
        if hit is None:
            text = decode(raw, self.path)
            previous = next(iter(self._cache.values()), None)
            parsed = parse_document(text, self.path, previous.known() if previous else None)
            if not isinstance(parsed.data, dict):
                raise LedgerInvalid("the ledger must be a mapping (task:, targets:, ...)", path=self.path, line=1, column=1)
            hit = _Parse(parsed.data, parsed.header, parsed.lines)
        self._cache = {key: hit}
        return key, hit, text

    # The parse sidecar: what the engine's last write parsed to, keyed by the file's
    # hash, so a new process (a CLI call, a TUI opening) skips parsing a ledger the
    # engine wrote. Its first line is the hash; anything else (a hand edit, a torn or
    # foreign file) falls back to parsing. It is only a cache: never fsynced.

    def _read_sidecar(self, key: str) -> _Parse | None:
        try:
            with open(self.parse_cache_path, "rb") as fh:
                if fh.readline().strip() != key.encode():
                    return None
                doc = json.loads(fh.read())
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("v") != 1:
            return None
        data, header, lines = doc.get("data"), doc.get("header"), doc.get("lines")
        if not (isinstance(data, dict) and isinstance(header, str) and isinstance(lines, dict)):
            return None
        return _Parse(data, header, lines)

    def _write_sidecar(self, key: str, data: dict, header: str, lines: dict[str, str]) -> None:
        body = json.dumps({"v": 1, "header": header, "lines": lines, "data": data}, ensure_ascii=False, separators=(",", ":"))
        try:
            atomic_write(self.parse_cache_path, key.encode() + b"\n" + body.encode("utf-8"), durable=False)
        except (OSError, UnicodeError):
            pass  # a cache that cannot be written only costs the next reader a parse

    def _snapshot(self, raw: bytes) -> tuple[Snapshot, _Parse]:
        """Read `raw`. Readers share one validated Ledger per content hash: it must never
        be changed (a transaction works on a copy)."""
        key, parsed, text = self._parse(raw)
        if parsed.ledger is None:
            ledger = to_ledger_reusing(parsed.data, self.path, text or raw.decode("utf-8", "replace"), parsed.lines, self._known)
            parsed.ledger = ledger
            self._known = {line: ledger.targets[name] for name, line in parsed.lines.items() if name in ledger.targets}
        else:
            ledger = parsed.ledger
        snap = Snapshot(ledger, key)
        record = self.last_write()
        if record and record.get("hash") != key:
            snap.external_edit = True
            names = record.get("names") or []
            if len(ledger.targets) < len(names):
                snap.missing = [n for n in names if n not in ledger.targets]
                snap.warnings.append(
                    f"{self.path} has {len(ledger.targets)} targets but the engine last wrote "
                    f"{len(names)} (revision {record.get('revision')}); missing: "
                    f"{', '.join(snap.missing[:10])}{' ...' if len(snap.missing) > 10 else ''}. "
                    "The file may be truncated: restore it, or run "
                    f"`handoff check {self.path} --accept-removal` if they were removed on purpose."
                )
        return snap, parsed

    def snapshot(self) -> Snapshot:
        """The ledger as it is on disk now."""
        return self._snapshot(self._raw())[0]

    def read(self) -> Ledger:
        return self.snapshot().ledger

    def last_write(self) -> dict[str, Any] | None:
        """The record of the last engine write, or None (never written, or torn)."""
        try:
            with open(self.lock_path, "rb") as fh:
                raw = fh.read()
        except OSError:  # none, not ours to read, a folder: no record (a write says what is wrong)
            return None
        try:
            record = json.loads(raw) if raw.strip() else None
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    # -- writing -----------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[int]:
        """Exclusive inter-process lock on the sidecar lock file."""
        if self.read_only:
            raise ReadOnly("this view is read-only; nothing can be changed from it")
        fd = open_sidecar(self.lock_path, os.O_RDWR | os.O_CREAT, ledger=real_path(self.path))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # closing releases the flock

    def transact(self, fn: Callable[[Ledger], T], *, accept_shrink: bool = False) -> tuple[T, int]:
        """Apply `fn` to the freshest ledger and write the result; returns (fn's result, revision).

        `fn` may be called more than once (if the file changes underneath) and must
        only change the ledger it is given. Raising inside `fn` writes nothing.
        """
        with self.lock() as fd:
            raw = self._raw()
            for _ in range(_CAS_RETRIES):
                snap, parsed = self._snapshot(raw)
                if snap.missing and not accept_shrink:
                    raise Refused(snap.warnings[0], title="Ledger shrank")
                # Unchanged targets keep their text (and are not re-validated or dumped)
                # only in a file the engine wrote last; the first write after a hand
                # edit validates everything and normalises the whole layout.
                record = self.last_write()
                ours = record is not None and record.get("hash") == snap.digest
                if ours:
                    ledger = cow_ledger(snap.ledger)
                else:
                    ledger = to_ledger(parsed.data, self.path, raw.decode("utf-8", "replace"))
                result = fn(ledger)
                ledger.revision = max(ledger.revision, _rev(parsed.data)) + 1
                targets = ledger.targets
                try:
                    if isinstance(targets, CowTargets):
                        ledger.targets = targets.plain()
                        ledger.check_states(targets.changed)
                        data = to_data(ledger, reuse=parsed.targets, changed=targets.changed)
                    else:
                        ledger.check_states()
                        data = to_data(ledger)
                    text, lines = emit_document(data, parsed.header, parsed.lines if ours else None, parsed.targets if ours else None)
                    out = text.encode("utf-8")
                except ValueError as err:  # an unknown state, text YAML cannot hold, a failed read-back
                    raise Refused(str(err), title="Cannot write that") from None
                # Compare-and-swap: if someone saved the file since we read it, start over.
                now = self._raw()
                if now != raw:
                    raw = now
                    continue
                try:
                    atomic_write(self.path, out)
                except OSError as err:  # disk full, a read-only mount: the old file stands
                    raise WriteFailed(f"cannot write {self.path}: {os_error_text(err)}; nothing was changed") from None
                self.saw_external_edit = snap.external_edit
                new_key = digest(out)
                self._cache = {new_key: _Parse(data, parsed.header, lines, ledger)}
                self._known = {line: ledger.targets[name] for name, line in lines.items() if name in ledger.targets}
                self._record(fd, ledger, new_key)
                self._write_sidecar(new_key, data, parsed.header, lines)
                return result, ledger.revision
            raise Refused(
                f"{self.path} kept changing while we tried to write it ({_CAS_RETRIES} tries); "
                "is an editor or script rewriting it in a loop?",
                title="Ledger busy",
            )

    def _record(self, fd: int, ledger: Ledger, key: str) -> None:
        body = json.dumps({"revision": ledger.revision, "hash": key, "names": list(ledger.targets)}).encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, body)

    def heartbeat(self):
        """The running session's heartbeat: the `<ledger>.heartbeat` sidecar."""
        from engine.session.lease import Heartbeat, heartbeat_path

        return Heartbeat(heartbeat_path(real_path(self.path)))

    def open_journal(self, *, read_only: bool = False):
        """The journal beside this ledger (`<ledger>.journal.jsonl`)."""
        from engine.journal import Journal, journal_path

        return Journal(journal_path(self.path), read_only=read_only)

    # -- watching ----------------------------------------------------------------

    async def watch(self, stop_event: asyncio.Event | None = None, debounce_ms: int = 50) -> AsyncIterator[WatchEvent]:
        """Yield a Snapshot whenever the ledger's content changes, or the LedgerInvalid
        error while it does not parse. Watches the parent folder: an atomic replace or an
        editor's save swaps the file's inode, which a watch on the file itself would miss."""
        from watchfiles import awatch  # imported here: `handoff status` must not pay for it

        target = real_path(self.path)
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
