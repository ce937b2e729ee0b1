"""The parse cache: what the targets of a file ledger parsed to, kept per user.

It lives in `$XDG_CACHE_HOME/handoff/` (default `~/.cache/handoff/`, folder 0700, files
0600), one file per ledger keyed by the ledger's real path, never beside the ledger:
nobody else can plant one, and no review of the ledger's folder has to know it exists.
It is only a shortcut to what the file itself says:
- it maps a target's exact source text to that text's parsed data, so an entry is used
  only where the file holds those very bytes;
- everything that is not a target (runbook, metrics, notify, invariants, approvers,
  budget, redact) is always parsed from the file;
- a missing, corrupt or foreign cache is ignored, never reported.

It is written with `marshal`, which keeps each value's exact type and is quicker than
JSON. Its format 4 writes an object met again as a reference, so each key string is
written (and loads) once, as JSON's decoder shares keys too (one per target would cost
2.6 MiB at 10,000 targets); `_entries` makes the keys one object each and sees that no
dict or list is written twice, which would load shared where a parse gives each target
its own. Like CPython's own `.pyc` files it is trusted only because nobody but its
owner can write it (`private`); anything it holds that is not the shape below is
ignored.
"""

from __future__ import annotations

import marshal
import os
import stat
from collections.abc import Callable

from engine.host.folders import cache_dir, cache_file, private
from engine.store.atomic import atomic_write, file_identity

VERSION = 3  # 3: marshal (2 was JSON, in `.json` files)
_FORMAT = 4  # marshal's: an object met again is written as a reference to the first


def cache_path(real: str) -> str:
    """Where the cache of the ledger at real path `real` lives."""
    return cache_file(real, ".parse")


def _json_path(real: str) -> str:
    """Where an engine before cache version 3 kept it (JSON): removed when this one is saved."""
    return cache_file(real, ".json")


def load(real: str) -> dict[str, tuple[str, dict]]:
    """target text -> (name, data) from the cache of `real`; {} when there is none to trust."""
    path = cache_path(real)
    if not private(path) or not private(os.path.dirname(path), stat.S_ISDIR):
        return {}
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            doc = marshal.loads(fh.read())
    except (OSError, ValueError, EOFError, TypeError, MemoryError):
        return {}
    if not isinstance(doc, dict) or doc.get("v") != VERSION or doc.get("path") != real:
        return {}
    entries = doc.get("targets")
    if not isinstance(entries, dict):
        return {}
    known: dict[str, tuple[str, dict]] = {}
    for text, item in entries.items():
        if type(item) is tuple and len(item) == 2 and isinstance(text, str) and isinstance(item[0], str) and isinstance(item[1], dict):
            known[text] = (item[0], item[1])
    _LOADED[path] = (st.st_ino, st.st_size, st.st_mtime_ns)  # after_read records what it holds of the file
    return known


def same_data(a: object, b: object) -> bool:
    """`a` and `b` are the same parsed data, types included (`1`, `1.0` and `true` are
    equal in Python, not in a ledger): what the cache said of a target's text against what
    the text says. Data JSON cannot carry is never called the same."""
    if a != b:
        return False
    import orjson  # C speed; it spells 1, 1.0 and true apart

    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:
        return False


def forget(real: str) -> None:
    """The cache of `real` as loaded turned out wrong (it did not validate): the next
    save writes it whatever it covers."""
    _SAVED.pop(cache_path(real), None)
    _LOADED.pop(cache_path(real), None)
    _COUNTED.pop(cache_path(real), None)


# cache file -> (the target texts it holds, as this process loaded or last saved it;
# that file's identity). A write that changed a few targets leaves the cache as it is:
# the next reader parses only those few lines itself (an entry is only ever used for
# the very text it was made from), instead of every `approve`, every transaction,
# writing 10,000 targets out again.
_SAVED: dict[str, tuple[frozenset[str], tuple[int, int, int]]] = {}
_LOADED: dict[str, tuple[int, int, int]] = {}  # cache file -> its identity when `load` read it
STALE_LINES = 8  # ... or 1% of the targets, whichever is more, before it is written again


# cache file -> (the texts counted against, the lines counted, how many of them the cache
# lacks): a write's count is the one of the document it was spliced on, moved by its names.
_COUNTED: dict[str, tuple[frozenset[str], dict[str, str], int]] = {}


def _missing(path: str, texts: frozenset[str], lines: dict[str, str], changed: tuple[dict[str, str], set[str]] | None) -> int:
    """How many of `lines` (each target's text is its own) are not in `texts`. With
    `changed` (the lines before a write and the names it touched), the count made for
    those very lines is carried over: only the touched names are looked at, not 10,000."""
    counted = _COUNTED.get(path)
    if changed is not None and counted is not None and counted[0] is texts and counted[1] is changed[0]:
        before, names = changed
        missing = counted[2]
        for name in names:
            missing -= name in before and before[name] not in texts
            missing += name in lines and lines[name] not in texts
    else:
        missing = len(lines) - sum(map(texts.__contains__, lines.values()))
    _COUNTED[path] = (texts, lines, missing)
    return missing


def after_read(real: str, lines: dict[str, str], targets: dict[str, dict], skip: Callable[[], set[str]],
               known: dict[str, tuple[str, dict]]) -> None:
    """A process's first read of a ledger, `known` being the cache `load` gave it: what
    the cache holds of this file is remembered (the file's own texts, so no second copy
    of 10,000 strings stays alive), and the cache is saved when it lacks more than a few
    of the file's targets, so a ledger nobody's engine wrote yet gets one too. `skip`
    (as for `save`) is only computed then."""
    path = cache_path(real)
    loaded = _LOADED.pop(path, None)
    if loaded is not None:
        _SAVED[path] = (frozenset(filter(known.__contains__, lines.values())), loaded)  # C speed: 10,000 texts
    if not _covers(path, lines):
        save(real, lines, targets, skip())


def _covers(path: str, lines: dict[str, str], changed: tuple[dict[str, str], set[str]] | None = None) -> bool:
    """The cache file at `path`, as this process knows it, lacks only a few of `lines`."""
    known = _SAVED.get(path)
    if known is None or known[1] != file_identity(path):
        return False
    return _missing(path, known[0], lines, changed) <= max(STALE_LINES, len(lines) // 100)


def _entries(lines: dict[str, str], targets: dict[str, dict], skip) -> dict[str, tuple[str, dict]]:
    """text -> (name, data) for the cache: in every target's data each key string is one
    object per distinct key (the first met), and no dict or list appears twice, so that
    marshal's references share the keys and nothing else. A target whose data is not so
    already (parsed by the YAML loader, or holding an alias) is written from a copy."""
    keys: dict[str, str] = {}
    seen: set[int] = set()
    out = {}
    for name, text in lines.items():
        if name in targets and name not in skip and type(targets[name]) is dict:  # `db-21:` alone is None: parsed each time
            data = targets[name]
            out[text] = (name, data if _canonical(data, keys, seen) else _copy(data, keys))
    return out


def _canonical(data: dict, keys: dict[str, str], seen: set[int]) -> bool:
    stack: list = [data]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            return False
        seen.add(id(value))
        if type(value) is dict:
            for key, item in value.items():
                if type(key) is str and keys.setdefault(key, key) is not key:
                    return False
                if type(item) is dict or type(item) is list:
                    stack.append(item)
        else:
            stack.extend(x for x in value if type(x) is dict or type(x) is list)
    return True


def _copy(value, keys: dict[str, str]):
    if type(value) is dict:
        return {keys.setdefault(k, k) if type(k) is str else k: _copy(v, keys) for k, v in value.items()}
    if type(value) is list:
        return [_copy(x, keys) for x in value]
    return value


def save(real: str, lines: dict[str, str], targets: dict[str, dict], skip: set[str] | frozenset[str] = frozenset(),
         *, changed: tuple[dict[str, str], set[str]] | None = None) -> None:
    """Remember what each target's text parsed to (best effort: a cache that cannot be
    written only costs the next reader a parse). `skip`: targets whose data marshal cannot
    carry (numbers that remember their spelling, `1.30`): they are parsed each time.
    Skipped while the cache this process wrote is still there and lacks only a few lines;
    `changed` (a write's lines before it, and the names it touched) makes that look cost
    only those names."""
    path = cache_path(real)
    if _covers(path, lines, changed):
        return
    folder = cache_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not private(folder, stat.S_ISDIR):
            return  # someone else's folder, or readable by others: do not put anything there
        entries = _entries(lines, targets, skip)
        body = marshal.dumps({"v": VERSION, "path": real, "targets": entries}, _FORMAT)
        if os.path.lexists(path) and not private(path):
            return
        atomic_write(path, body, durable=False, sidecar_of=path)
        os.chmod(path, 0o600)
        if private(_json_path(real)):
            try:
                os.unlink(_json_path(real))
            except OSError:
                pass  # gone already (another process), or not ours to remove: this one is saved
        identity = file_identity(path)
        if identity is not None:
            _SAVED[path] = (frozenset(entries), identity)
            _COUNTED[path] = (_SAVED[path][0], lines, len(lines) - len(entries))
    except (OSError, ValueError):
        pass  # only a cache (ValueError: a value marshal cannot write, such as a type no parse gives)
