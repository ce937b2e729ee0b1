"""The parse cache lives in the per-user cache folder and never says anything the YAML does not."""

from __future__ import annotations

import json
import marshal
import os
import stat
from pathlib import Path

import pytest

from engine.codec import numbers
from engine.store import parse_cache
from engine.store.file import FileStore, digest
from tests.conftest import RUNBOOK_LEDGER, cli_env, handoff


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def _written(tmp_path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    FileStore(str(path)).transact(lambda ledger: None)
    return path


def test_the_cache_is_private_and_not_beside_the_ledger(tmp_path, cache_home):
    """After a write the cache is one 0600 file in $XDG_CACHE_HOME/handoff (0700); nothing beside the ledger."""
    path = _written(tmp_path)
    files = list((cache_home / "handoff").iterdir())
    assert len(files) == 1 and files[0] == Path(parse_cache.cache_path(os.path.realpath(path)))
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((cache_home / "handoff").stat().st_mode) == 0o700
    assert not any(p.name.endswith(".cache.json") for p in tmp_path.iterdir())
    assert len(parse_cache.load(os.path.realpath(path))) == 5  # one entry per target's text


def test_a_forged_cache_beside_the_ledger_is_never_read(tmp_path, cache_home):
    """The old `<ledger>.cache.json` with a matching hash line and an EVIL runbook changes nothing."""
    path = _written(tmp_path)
    raw = path.read_bytes()
    forged = {"v": 1, "header": "", "lines": {}, "data": {
        "task": "forged", "runbook": {"steps": [{"name": "cutover", "from": "verified", "to": "done", "run": ["EVIL"]}]},
        "targets": {"db-2": {"state": "verified", "approvals": [{"by": "x", "user": "x", "at": "t", "step": "cutover", "hash": "h"}]}}}}
    (tmp_path / "fleet.yaml.cache.json").write_text(digest(raw) + "\n" + json.dumps(forged))
    ledger = FileStore(str(path)).read()
    assert ledger.task == "small-fleet" and ledger.step("cutover").run[0] == "echo"
    assert ledger.targets["db-2"].approvals == []
    assert path.read_bytes() == raw


def test_the_cache_supplies_nothing_but_entries_for_text_the_file_holds(tmp_path, cache_home):
    """Everything that is not a target comes from the file; an entry for text the file does not hold is unused."""
    path = _written(tmp_path)
    cache = Path(parse_cache.cache_path(os.path.realpath(path)))
    doc = marshal.loads(cache.read_bytes())
    doc["targets"]["  db-9: {state: done}"] = ("db-2", {"state": "done"})  # text the file does not hold
    doc["runbook"] = {"steps": []}  # ignored: not a field of the cache at all
    cache.write_bytes(marshal.dumps(doc))
    os.chmod(cache, 0o600)
    ledger = FileStore(str(path)).read()
    assert ledger.targets["db-2"].state == "verified" and len(ledger.steps()) == 4


def _cache_with(path: Path, change) -> bytes:
    """The cache of `path` as marshal bytes after `change(entries)` (text -> (name, data))."""
    doc = marshal.loads(Path(parse_cache.cache_path(os.path.realpath(path))).read_bytes())
    change(doc["targets"])
    return marshal.dumps(doc)


def _with_db5(entries: dict, value) -> None:
    text = next(t for t, (name, _) in entries.items() if name == "db-5")
    entries[text] = value


@pytest.mark.parametrize("body", [
    b"\x00garbage", b"[]", marshal.dumps([]), marshal.dumps({"v": 3, "path": "x"}),
    lambda path: _cache_with(path, lambda e: None)[:-40],  # cut short
    lambda path: _cache_with(path, lambda e: _with_db5(e, ["db-5", {"state": "done"}])),  # a list, not the tuple written
    lambda path: _cache_with(path, lambda e: _with_db5(e, ("db-5", {"state": "no-such-state", "approvals": "x"}))),
], ids=["garbage", "json-list", "marshal-list", "other-path", "truncated", "wrong-shape", "invalid-entry"])
def test_a_corrupt_or_foreign_cache_is_ignored_never_an_error(tmp_path, cache_home, body):
    """Garbage, a cache cut short, of another path, an entry of the wrong shape, or an entry
    whose data does not validate: read as the file says, no error."""
    path = _written(tmp_path)
    cache = Path(parse_cache.cache_path(os.path.realpath(path)))
    if callable(body):
        body = body(path)
    cache.write_bytes(body)
    os.chmod(cache, 0o600)
    env = cli_env(XDG_CACHE_HOME=str(cache_home))
    result = handoff("status", str(path), "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["targets"]["db-5"]["state"] == "queued"
    if b"no-such-state" in body:  # the next write puts right what the cache says, whatever it covered
        assert handoff("note", str(path), "--set", "cache check", env=env).returncode == 0
        assert b"no-such-state" not in cache.read_bytes()


def test_the_cache_gives_back_exactly_what_the_parse_gave(tmp_path, cache_home):
    """Every entry loads as the parse's own data, types included (1, 1.5, true, null, nested
    lists and mappings, text beyond the BMP), each in containers of its own; a target
    with a spelled number (`1.30`) is left out, and parsed from the file each time."""
    path = tmp_path / "kinds.yaml"
    path.write_text("task: t\ntargets:\n"
                    "  db-1: {state: queued, checkpoint: 0/1A, budget: 1, ratio: 1.5, ok: true, gone: null}\n"
                    "  db-2: {state: queued, 7: seven, tags: [a, [b, {c: 1}]], note: \"caf\\u00e9 \\U0001F680\"}\n"
                    "  db-3: {state: queued, checkpoint: 1.30}\n")
    from engine.codec.document import parse_document

    parsed = parse_document(path.read_text(errors="surrogateescape"), str(path)).data["targets"]
    assert handoff("status", str(path), env=cli_env(XDG_CACHE_HOME=str(cache_home))).returncode == 0
    known = parse_cache.load(os.path.realpath(path))
    by_name = {name: data for name, data in known.values()}
    assert set(by_name) == {"db-1", "db-2"}  # db-3's 1.30 remembers its spelling: not cached
    for name, data in by_name.items():
        assert numbers.same(data, parsed[name]), name
    assert by_name["db-2"]["note"] == "caf\u00e9 \U0001F680"


def test_entries_share_no_containers(tmp_path, cache_home):
    """Data saved with one list in two targets loads as two lists: a change to one target's
    data can never reach another's, whatever the saver shared."""
    shared = ["a", "b"]
    real = os.path.realpath(tmp_path / "l.yaml")
    parse_cache.save(real, {"db-1": "  db-1: {tags: [a, b]}", "db-2": "  db-2: {tags: [a, b]}"},
                     {"db-1": {"tags": shared}, "db-2": {"tags": shared}})
    known = parse_cache.load(real)
    one, two = (data["tags"] for _, data in known.values())
    assert one == two == shared and one is not two


def test_entries_share_their_key_strings_as_a_parse_does(tmp_path, cache_home):
    """A cache saved from a parse loads with one string per distinct key, not one per target
    (10,000 targets: 2.6 MiB), while each target keeps its own containers."""
    path = tmp_path / "many.yaml"
    path.write_text("task: t\ntargets:\n" + "".join(f"  db-{i}: {{state: done, checkpoint: 0/{i:X}}}\n" for i in range(50)))
    assert handoff("status", str(path), env=cli_env(XDG_CACHE_HOME=str(cache_home))).returncode == 0
    known = parse_cache.load(os.path.realpath(path))
    datas = [data for _, data in known.values()]
    assert len(datas) == 50 and len({id(k) for data in datas for k in data}) == 2
    assert len({id(data) for data in datas}) == 50


def test_an_earlier_engines_json_cache_is_removed_when_this_one_is_saved(tmp_path, cache_home):
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    old = Path(parse_cache.cache_path(os.path.realpath(path))).with_suffix(".json")
    old.parent.mkdir(mode=0o700, parents=True)
    old.write_text('{"v": 2}')
    os.chmod(old, 0o600)
    FileStore(str(path)).transact(lambda ledger: None)
    assert not old.exists() and Path(parse_cache.cache_path(os.path.realpath(path))).exists()


def test_a_cache_others_can_write_is_not_trusted(tmp_path, cache_home):
    """A cache file or folder readable or writable by others is neither read nor written."""
    path = _written(tmp_path)
    cache = Path(parse_cache.cache_path(os.path.realpath(path)))
    os.chmod(cache, 0o666)
    assert parse_cache.load(os.path.realpath(path)) == {}
    os.chmod(cache, 0o600)
    os.chmod(cache_home / "handoff", 0o777)
    assert parse_cache.load(os.path.realpath(path)) == {}


def test_a_write_of_few_targets_keeps_the_cache_and_readers_still_read_the_file(tmp_path, cache_home):
    """A one-target change does not rewrite the cache (it lacks one line); a fresh reader
    parses that line from the file, never takes an old entry for it; a deleted cache is
    saved again by the next read, and enough changed lines make the next write save it."""
    path = _written(tmp_path)
    cache = parse_cache.cache_path(os.path.realpath(path))
    before = Path(cache).read_bytes()
    FileStore(str(path)).transact(lambda ledger: setattr(ledger.targets["db-5"], "state", "checked"))
    assert Path(cache).read_bytes() == before
    fresh = FileStore(str(path)).read()
    assert fresh.targets["db-5"].state == "checked" and fresh.targets["db-2"].state == "verified"
    os.unlink(cache)
    FileStore(str(path)).transact(lambda ledger: setattr(ledger.targets["db-5"], "reason", "again"))
    assert os.path.exists(cache)  # saved again by the transaction's first read, before its one-target change
    assert b'"again"' not in Path(cache).read_bytes()
    assert FileStore(str(path)).read().targets["db-5"].reason == "again"

    big = tmp_path / "big.yaml"
    big.write_text("task: t\ntargets:\n" + "".join(f"  db-{i}: {{state: queued}}\n" for i in range(20)))
    store = FileStore(str(big))
    store.transact(lambda ledger: None)
    big_cache = parse_cache.cache_path(os.path.realpath(big))
    first = Path(big_cache).read_bytes()
    for n in range(parse_cache.STALE_LINES + 4):  # one target changed again and again lacks one line, not many
        store.transact(lambda ledger, n=n: setattr(ledger.targets["db-0"], "reason", f"try {n}"))
    assert Path(big_cache).read_bytes() == first
    for i in range(parse_cache.STALE_LINES):  # up to the allowance: the cache stands
        store.transact(lambda ledger, i=i: setattr(ledger.targets[f"db-{i}"], "state", "done"))
    assert Path(big_cache).read_bytes() == first
    store.transact(lambda ledger: setattr(ledger.targets["db-19"], "state", "done"))  # one more: saved again
    assert Path(big_cache).read_bytes() != first and FileStore(str(big)).read().counts() == {"queued": 11, "done": 9}


def test_a_first_read_leaves_the_cache_for_the_next_reader(tmp_path, cache_home):
    """`handoff status` on a ledger no engine wrote (by hand, by a script) saves the cache,
    so the next reader parses only what changed; a reader whose cache covers the file does
    not write it again, and the ledger itself is never touched by a read."""
    path = tmp_path / "big.yaml"
    path.write_text("task: t\ntargets:\n" + "".join(f"  db-{i}: {{state: queued}}\n" for i in range(20)))
    before = path.read_bytes()
    env = cli_env(XDG_CACHE_HOME=str(cache_home))
    assert handoff("status", str(path), env=env).returncode == 0
    cache = Path(parse_cache.cache_path(os.path.realpath(path)))
    assert len(parse_cache.load(os.path.realpath(path))) == 20
    stamp = cache.stat().st_mtime_ns
    assert handoff("status", str(path), env=env).returncode == 0
    assert cache.stat().st_mtime_ns == stamp  # the cache covered the file: not written again
    assert path.read_bytes() == before
    assert FileStore(str(path)).read().counts() == {"queued": 20}
    # A write in a new process whose targets the cache holds (as it loaded it) does not dump them all again.
    assert handoff("note", str(path), "--set", "an earlier shift", env=env).returncode == 0
    assert cache.stat().st_mtime_ns == stamp
