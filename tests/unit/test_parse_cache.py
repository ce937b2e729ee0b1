"""The parse cache lives in the per-user cache folder and never says anything the YAML does not."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

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
    doc = json.loads(cache.read_text())
    doc["targets"]["  db-9: {state: done}"] = ["db-2", {"state": "done"}]  # text the file does not hold
    doc["runbook"] = {"steps": []}  # ignored: not a field of the cache at all
    cache.write_text(json.dumps(doc))
    os.chmod(cache, 0o600)
    ledger = FileStore(str(path)).read()
    assert ledger.targets["db-2"].state == "verified" and len(ledger.steps()) == 4


@pytest.mark.parametrize("body", [b"\x00garbage", b"[]", b'{"v": 2, "path": "x"}', None])
def test_a_corrupt_or_foreign_cache_is_ignored_never_an_error(tmp_path, cache_home, body):
    """Garbage, a cache of another path, or an entry whose data does not validate: read as the file says, no error."""
    path = _written(tmp_path)
    cache = Path(parse_cache.cache_path(os.path.realpath(path)))
    if body is None:  # an entry for the file's real text whose data is nonsense
        doc = json.loads(cache.read_text())
        text = next(t for t, (name, _) in doc["targets"].items() if name == "db-5")
        doc["targets"][text] = ["db-5", {"state": "no-such-state", "approvals": "x"}]
        body = json.dumps(doc).encode()
    cache.write_bytes(body)
    os.chmod(cache, 0o600)
    env = cli_env(XDG_CACHE_HOME=str(cache_home))
    result = handoff("status", str(path), "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["targets"]["db-5"]["state"] == "queued"
    if b"no-such-state" in body:  # the next write puts right what the cache says, whatever it covered
        assert handoff("note", str(path), "--set", "cache check", env=env).returncode == 0
        assert b"no-such-state" not in cache.read_bytes()


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
        store.transact(lambda ledger: setattr(ledger.targets[f"db-{i}"], "state", "done"))
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
