"""The file store: atomic writes that keep mode and symlinks, compare-and-swap against a
human's save, the shrink guard, parse errors that never get overwritten, and the watch."""

from __future__ import annotations

import asyncio
import json
import os
import stat

import pytest

from engine.errors import LedgerInvalid, Refused
from engine.store.file import FileStore
from engine.store.record import OLDER_ENGINES
from tests.conftest import ARTICLE


def _state(ledger, name="db-19", value="checked"):
    ledger.targets[name].state = value


def test_transact_bumps_revision_and_records_the_write(article):
    """Each transaction bumps `revision`; the record of the last write keeps revision, hash, targets, steps, metrics, budget."""
    store = FileStore(str(article))
    _, rev = store.transact(_state)
    assert rev == 1
    _, rev = store.transact(lambda l: _state(l, "db-17", "done"))
    assert rev == 2
    record = json.loads((article.parent / "ledger.yaml.last-write.json").read_text())
    assert record["revision"] == 2 and record["count"] == 4 and "names" not in record  # the list is beside it
    names = json.loads((article.parent / "ledger.yaml.last-write.names.json").read_text())["lists"]
    assert names == {record["names_digest"]: ["db-17", "db-18", "db-19", "db-20"]}  # unchanged names: one list
    assert record["steps"] == [OLDER_ENGINES] and record["metrics"] == [] and record["budget"] is False  # no step
    assert FileStore(str(article)).read().revision == 2


def test_a_raising_function_writes_nothing(article):
    """If the change raises, the file is byte-for-byte as it was."""
    before = article.read_bytes()

    def boom(ledger):
        ledger.targets["db-19"].state = "done"
        raise Refused("no")

    with pytest.raises(Refused):
        FileStore(str(article)).transact(boom)
    assert article.read_bytes() == before


def test_write_keeps_the_file_mode(article):
    """A ledger with mode 0640 still has mode 0640 after an engine write (a new inode)."""
    os.chmod(article, 0o640)
    inode = os.stat(article).st_ino
    FileStore(str(article)).transact(_state)
    assert stat.S_IMODE(os.stat(article).st_mode) == 0o640
    assert os.stat(article).st_ino != inode  # replaced, not written in place


def test_symlinked_ledger_is_written_through(tmp_path):
    """Writing through a symlink changes the real file; the link stays a link; sidecars sit by the real file."""
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "ledger.yaml"
    real.write_text(ARTICLE)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    FileStore(str(link)).transact(_state)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "db-19: {state: checked}" in real.read_text()
    assert (real_dir / "ledger.yaml.lock").exists()
    assert not (tmp_path / "link.yaml.lock").exists()


def test_no_temp_files_are_left_behind(article):
    """After writes (and a refused one), the folder holds the ledger and its sidecars only (the history journal among them)."""
    store = FileStore(str(article))
    store.transact(_state)
    with pytest.raises(Refused):
        store.transact(lambda l: (_ for _ in ()).throw(Refused("x")))
    assert sorted(p.name for p in article.parent.iterdir()) == ["ledger.yaml", "ledger.yaml.history.jsonl",
                                                                  "ledger.yaml.last-write.json",
                                                                  "ledger.yaml.last-write.names.json",
                                                                  "ledger.yaml.last-write.targets.json", "ledger.yaml.lock"]


def test_human_save_between_read_and_write_is_reapplied_not_overwritten(article):
    """A save (vim-style rename) made while the change runs is detected; the change is re-applied on top of it."""
    store = FileStore(str(article))
    calls = []

    def change(ledger):
        calls.append(ledger.targets["db-20"].reason)
        if len(calls) == 1:
            # A human saves the file while we hold our reading.
            edited = ARTICLE.replace("pending app-team ack (ticket PLAT-4412)", "acked by app team")
            tmp = article.parent / ".ledger.yaml.swp"
            tmp.write_text(edited)
            os.replace(tmp, article)
        ledger.targets["db-19"].state = "checked"

    store.transact(change)
    assert calls == ["pending app-team ack (ticket PLAT-4412)", "acked by app team"]
    text = article.read_text()
    assert "acked by app team" in text and "db-19: {state: checked}" in text


def test_a_file_that_keeps_changing_is_refused(article):
    """If the file changes under every attempt, the transaction gives up with a clear refusal and writes nothing of ours."""
    store = FileStore(str(article))
    n = [0]

    def change(ledger):
        n[0] += 1
        article.write_text(ARTICLE + f"# edit {n[0]}\n")
        ledger.targets["db-19"].state = "checked"

    with pytest.raises(Refused, match="kept changing"):
        store.transact(change)
    assert "checked" not in article.read_text()


def test_invalid_file_is_never_overwritten(article):
    """A ledger that does not parse refuses every transaction; its bytes stay as they are."""
    broken = ARTICLE.replace("db-19: {state: queued}", "db-19: {state: queued")
    article.write_text(broken)
    with pytest.raises(LedgerInvalid) as caught:
        FileStore(str(article)).transact(_state)
    assert str(caught.value).startswith(f"{article}:")
    assert article.read_text() == broken


def test_shrunken_file_is_refused_and_named(article):
    """A file with fewer targets than the engine last wrote is refused, naming the missing targets and the way out."""
    store = FileStore(str(article))
    store.transact(_state)
    text = article.read_text()
    truncated = text[: text.index("  db-19")]  # cut mid-file: still parses
    article.write_text(truncated)
    snap = FileStore(str(article)).snapshot()
    assert snap.missing == ["db-19", "db-20"]
    with pytest.raises(Refused) as caught:
        FileStore(str(article)).transact(lambda l: None)
    message = str(caught.value)
    assert "db-19, db-20" in message and "--accept-removal" in message and "truncated" in message
    assert article.read_text() == truncated
    # Accepting the removal records the new set of names; later writes go through.
    FileStore(str(article)).transact(lambda l: None, accept_shrink=True)
    FileStore(str(article)).transact(lambda l: None)
    assert FileStore(str(article)).snapshot().missing == []


def test_reads_are_cached_by_content(article):
    """Re-reading unchanged bytes returns the same validated ledger; changed bytes give a new one."""
    store = FileStore(str(article))
    first = store.read()
    assert store.read() is first
    store.transact(_state)
    assert store.read() is not first
    assert store.read().targets["db-19"].state == "checked"


def test_transaction_does_not_touch_a_readers_ledger(article):
    """A transaction changes its own copy; a ledger handed to a reader stays as it was read."""
    store = FileStore(str(article))
    seen = store.read()
    store.transact(_state)
    assert seen.targets["db-19"].state == "queued"


async def _events(store, action, count, timeout=10.0):
    """The first `count` events the watch yields while `action(got)` runs in a thread (it
    may wait on `got`, the events so far, to save again only once the last save was seen)."""
    stop = asyncio.Event()
    got = []

    async def consume():
        async for event in store.watch(stop):
            got.append(event)
            if len(got) >= count:
                stop.set()

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.3)  # let the watcher start
    await asyncio.to_thread(action, got)
    await asyncio.wait_for(task, timeout)
    return got


def _seen(got: list, n: int) -> None:
    """Wait (in the action's thread) until the watch has yielded `n` events: the next save is
    then a change of its own, not one the watcher's debounce may fold into the last."""
    from session_kit import wait_for

    wait_for(lambda: len(got) >= n, 10, f"the watch to yield {n} events")


async def test_watch_sees_an_atomic_replace(article):
    """The watch yields the new ledger after an engine write (a rename, seen as *added* on the folder)."""
    store = FileStore(str(article))
    got = await _events(store, lambda _got: FileStore(str(article)).transact(_state), 1)
    assert got[0].ledger.targets["db-19"].state == "checked"


async def test_watch_sees_editor_saves_one_after_another(article):
    """Two saves in a row (rename, then truncate-and-write) each give an event; the watch survives the inode swap."""

    def edits(got):
        tmp = article.parent / "ledger.yaml.tmp~"
        tmp.write_text(ARTICLE.replace("db-19: {state: queued}", "db-19: {state: checked}"))
        os.replace(tmp, article)
        _seen(got, 1)
        with open(article, "w") as fh:
            fh.write(ARTICLE.replace("db-19: {state: queued}", "db-19: {state: done}"))

    got = await _events(FileStore(str(article)), edits, 2)
    assert [e.ledger.targets["db-19"].state for e in got] == ["checked", "done"]


async def test_watch_reports_a_broken_file_then_recovers(article):
    """A save that does not parse yields the error (file:line:col); the next good save yields a ledger."""

    def edits(got):
        article.write_text("task: t\ntargets:\n  a: {state: queued\n")
        _seen(got, 1)
        article.write_text(ARTICLE)

    got = await _events(FileStore(str(article)), edits, 2)
    assert isinstance(got[0], LedgerInvalid) and str(got[0]).startswith(f"{article}:")
    assert got[1].ledger.task == "pg14-to-pg16-fleet-upgrade"


async def test_watch_ignores_other_files_in_the_folder(article):
    """Writing a sibling file (the journal, a temp file) yields nothing; only the ledger counts."""

    def edits(_got):
        import time

        (article.parent / "other.yaml").write_text("x: 1\n")
        (article.parent / "ledger.yaml.journal.jsonl").write_text("{}\n")
        time.sleep(0.4)
        FileStore(str(article)).transact(_state)

    got = await _events(FileStore(str(article)), edits, 1)
    assert len(got) == 1 and got[0].ledger.targets["db-19"].state == "checked"


def test_a_big_ledger_is_recorded_under_the_hash_of_what_was_written(tmp_path):
    """Past 256 KiB the new file's hash is worked out in a thread beside its temp write: the
    record (and its pending mark before the swap) must still name the bytes on disk, or the
    next reader takes the engine's own write for a hand edit."""
    from engine.store.file import _HASH_BESIDE, digest

    path = tmp_path / "ledger.yaml"
    rows = "".join(f"  db-{i:05d}:\n    state: queued\n    checkpoint: 0/{i:08X}\n" for i in range(6000))
    path.write_text("task: big\ntargets:\n" + rows, encoding="utf-8")
    assert path.stat().st_size > _HASH_BESIDE
    store = FileStore(str(path))
    for rev in (1, 2):
        store.transact(lambda l, rev=rev: _state(l, "db-00007", ["checked", "done"][rev - 1]))
        record = json.loads((tmp_path / "ledger.yaml.last-write.json").read_text())
        assert record["hash"] == digest(path.read_bytes()) and "pending" not in record
        snap = FileStore(str(path)).snapshot()  # another process's reader
        assert not snap.external_edit and snap.ledger.revision == rev


def test_a_big_ledger_is_written_when_no_thread_can_be_started(tmp_path, monkeypatch):
    """A container at its process limit refuses a new thread: the write hashes the file
    itself and goes on, recorded under the hash of the bytes on disk."""
    import threading

    from engine.store.file import digest

    def refused(self):
        raise RuntimeError("can't start new thread")

    path = tmp_path / "ledger.yaml"
    rows = "".join(f"  db-{i:05d}:\n    state: queued\n    checkpoint: 0/{i:08X}\n" for i in range(6000))
    path.write_text("task: big\ntargets:\n" + rows, encoding="utf-8")
    store = FileStore(str(path))
    store.read()
    monkeypatch.setattr(threading.Thread, "start", refused)
    store.transact(lambda l: _state(l, "db-00007", "checked"))
    record = json.loads((tmp_path / "ledger.yaml.last-write.json").read_text())
    assert record["hash"] == digest(path.read_bytes())
    assert FileStore(str(path)).read().targets["db-00007"].state == "checked"


def test_a_save_made_while_the_engine_writes_is_never_swapped_out_even_for_a_moment(tmp_path, monkeypatch):
    """A save that lands after the engine read the file, while its new copy is being written, is
    seen before the swap: the engine's copy (built on the old file) is never in place, not even
    between the two exchanges of the compare-and-swap, where an editor re-reading would see it."""
    from engine.store import atomic

    path = tmp_path / "ledger.yaml"
    path.write_bytes(b"human_edits: 17\n")
    seen: list[bytes] = []
    exchange = atomic._exchange

    def watched(a, b):
        done = exchange(a, b)
        seen.append(path.read_bytes())  # what anyone reading the file right now gets
        return done

    monkeypatch.setattr(atomic, "_exchange", watched)

    def editor_saves():
        (tmp_path / ".swp").write_bytes(b"human_edits: 18\n")
        os.replace(tmp_path / ".swp", path)

    theirs = atomic.atomic_write(str(path), b"human_edits: 17\nengine: 1\n", expect=b"human_edits: 17\n",
                                 before_swap=editor_saves)
    assert theirs == b"human_edits: 18\n"  # handed back for the engine to re-apply on
    assert path.read_bytes() == b"human_edits: 18\n"
    assert b"engine: 1\n" not in b"".join(seen), seen
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.yaml"]
