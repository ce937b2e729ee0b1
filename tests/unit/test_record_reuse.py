"""A sidecar record's parse is reused only for the very bytes it came from
(engine.store.sidecar.read_record): a file rewritten, torn, emptied or removed is read as it
is now, and what a caller changes in a returned record never reaches the next caller."""

from __future__ import annotations

import json
from pathlib import Path

from engine.store.sidecar import read_record


def test_a_record_is_read_as_the_file_is_now(tmp_path: Path) -> None:
    ledger = tmp_path / "l.yaml"
    ledger.write_text("task: t\n", encoding="utf-8")
    path = tmp_path / "l.yaml.last-write.json"
    path.write_text(json.dumps({"revision": 1, "names": ["a", "b"]}), encoding="utf-8")
    first = read_record(str(path), str(ledger))
    assert first == {"revision": 1, "names": ["a", "b"]}
    first["revision"] = 99
    first["extra"] = True
    assert read_record(str(path), str(ledger)) == {"revision": 1, "names": ["a", "b"]}  # a copy went out
    path.write_text(json.dumps({"revision": 2, "names": ["a"]}), encoding="utf-8")  # same size or not: the bytes decide
    assert read_record(str(path), str(ledger)) == {"revision": 2, "names": ["a"]}
    path.write_text(json.dumps({"revision": 3, "names": ["a"]}), encoding="utf-8")  # same length as the last
    assert read_record(str(path), str(ledger)) == {"revision": 3, "names": ["a"]}
    path.write_text('{"revision": 3, "na', encoding="utf-8")  # torn
    assert read_record(str(path), str(ledger)) is None
    path.write_text("", encoding="utf-8")
    assert read_record(str(path), str(ledger)) is None
    path.unlink()
    assert read_record(str(path), str(ledger)) is None


def test_a_names_list_is_encoded_again_whenever_it_differs_from_the_last() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from engine.host.digests import content_digest
    from engine.store.record import _names

    def fresh(names: list[str]) -> tuple[str, str]:
        return content_digest(json.dumps(names).encode("utf-8")), json.dumps(names)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.lists(st.text(max_size=8), max_size=6), min_size=1, max_size=4))
    def check(seq):
        for names in seq:
            assert _names(names) == fresh(names)
        names = seq[-1]
        names.append("later")  # the caller's list changed after it was encoded
        assert _names(names) == fresh(names)

    check()


def test_what_a_write_remembers_of_its_record_is_what_the_file_says(fleet: Path) -> None:
    from engine.store.file import FileStore

    store = FileStore(str(fleet))
    for i in range(3):
        store.transact(lambda ledger, i=i: setattr(ledger.targets[next(iter(ledger.targets))], "next_action", f"n{i}"))
        with open(store.record_path, "rb") as fh:
            assert store.last_write() == json.loads(fh.read())
