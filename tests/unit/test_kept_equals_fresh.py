"""What a store keeps after a write is what the file says: `store.read()` after `transact`
equals a fresh read of the file (by another process, with its own parse cache), and both
equal what YAML says. A write that could not keep that promise is refused, the file unchanged.

Found by a review that compared the kept ledger with fresh reads under hypothesis (stop 46);
each test below is one of its minimal cases.
"""

from __future__ import annotations

import re

import pytest

from engine.codec import strict
from engine.codec.document import parse_document
from engine.errors import Refused
from engine.ledger import ops
from engine.store.file import FileStore
from tests.conftest import RUNBOOK_LEDGER


def write(tmp_path, text: str) -> str:
    path = tmp_path / "ledger.yaml"
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def fresh(path: str, monkeypatch, tmp_path) -> FileStore:
    """A reader with its own, empty, per-user parse cache: another user, or another machine."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-cache"))
    return FileStore(path)


def reverse(ledger) -> None:
    ledger.targets = {name: ledger.targets[name] for name in reversed(list(ledger.targets))}


@pytest.mark.parametrize("text", [RUNBOOK_LEDGER, "task: t\ntargets:\n  a: {state: done, owner: ann}\n  b: {state: queued}\n"])
def test_targets_given_as_a_dict_of_their_own_are_kept_as_targets(tmp_path, monkeypatch, text):
    """The dict holds what the transaction handed out (views of the readers' objects): kept as
    targets, never as views (whose dump raised, and whose unknown keys failed the write)."""
    path = write(tmp_path, text)
    store = FileStore(path)
    store.transact(reverse)
    kept = store.read()
    assert {type(t).__name__ for t in dict.values(kept.targets)} == {"Target"}
    assert kept.model_dump() == fresh(path, monkeypatch, tmp_path).read().model_dump()
    store.transact(lambda ledger: setattr(ledger, "targets", ledger.targets.copy()))
    assert store.read().model_dump() == FileStore(path).read().model_dump()


BLOCK = "task: t\ntargets:\n  a:\n    reason: |\n      text\n  b: {state: queued, checkpoint: '0/1'}\n"


def test_a_block_scalar_ending_a_target_keeps_its_line_break(tmp_path):
    text = "task: t\ntargets:\n  a:\n    reason: |\n      text\n"
    assert parse_document(text, "l").data["targets"]["a"]["reason"] == strict.load(text, "l")["targets"]["a"]["reason"] == "text\n"
    without_end = text[:-1]  # no line break at the end of the file: none in the text either, as YAML says
    assert parse_document(without_end, "l").data["targets"]["a"]["reason"] == strict.load(without_end, "l")["targets"]["a"]["reason"]


@pytest.mark.parametrize("write_b", [lambda ledger: ledger.targets.__delitem__("b"),
                                     lambda ledger: setattr(ledger.targets["b"], "state", "checked")])
def test_changing_the_neighbour_of_a_block_scalar_target_changes_nothing_in_it(tmp_path, monkeypatch, write_b):
    path = write(tmp_path, BLOCK)
    store = FileStore(path)
    assert store.read().targets["a"].reason == "text\n"
    store.transact(write_b, accept_shrink=True)
    assert store.read().targets["a"].reason == fresh(path, monkeypatch, tmp_path).read().targets["a"].reason == "text\n"


def test_a_crlf_blank_line_inside_targets_hides_none_of_them(tmp_path):
    text = "task: t\r\ntargets:\r\n  db-1: {state: done}\r\n\r\n  db-2: {state: queued}\r\n"
    path = write(tmp_path, text)
    assert list(strict.load(text, path)["targets"]) == list(FileStore(path).read().targets) == ["db-1", "db-2"]


def test_the_last_target_taken_out_leaves_an_empty_mapping_that_loads(tmp_path, monkeypatch):
    path = write(tmp_path, "task: t\ntargets:\n  a: {state: done}\n")
    store = FileStore(path)
    store.transact(lambda ledger: ledger.targets.clear(), accept_shrink=True)
    text = open(path, encoding="utf-8").read()
    assert strict.load(text, path)["targets"] == {}, text  # a bare `targets:` is null to YAML
    assert dict(fresh(path, monkeypatch, tmp_path).read().targets) == {}
    store.transact(lambda ledger: ledger.targets.__setitem__("b", ledger.targets.get("b") or _queued()))
    assert list(FileStore(path).read().targets) == ["b"]


def _queued():
    from engine.ledger.model import Target

    return Target(state="queued")


RUNBOOK_STATE = ("task: t\nrunbook:\n  steps:\n  - {name: park, from: queued, to: parked, run: [echo]}\n"
                 "targets:\n  a: {state: parked}\n  b: {state: queued}\n")


def test_a_runbook_change_that_leaves_an_untouched_target_in_an_unknown_state_is_refused(tmp_path):
    """Written, the file would no longer load for anyone: refused, and the file is as it was."""
    path = write(tmp_path, RUNBOOK_STATE)
    before = open(path, "rb").read()
    with pytest.raises(Refused, match="target 'a' is in state 'parked', which neither"):
        FileStore(path).transact(lambda ledger: ledger.runbook.steps.pop())
    assert open(path, "rb").read() == before
    assert FileStore(path).read().targets["a"].state == "parked"


@pytest.mark.parametrize("text, change, line", [
    ("task: t\ntargets:\n  a: {state: done}\nhandoff_note_by: bob\nhandoff_note: short\n  # indented comment after note\n",
     lambda ledger: ops.set_note(ledger, ops.Who("alice", "alice"), "line one\nline two\n", base=None),
     "line 6 below it ('# indented comment after note')"),
    ("task: t\ntargets:\n  a: {state: done}\n  # more targets to come\n",
     lambda ledger: setattr(ledger, "handoff_note", "line one\nline two\n"), "line 4 below it ('# more targets to come')"),
])
def test_a_block_scalar_that_would_take_in_a_persons_indented_comment_is_refused(tmp_path, text, change, line):
    """YAML reads every more-indented line after `note: |` as the note's text: written there,
    the comment would come back as part of the note. Refused, saying which line to move."""
    path = write(tmp_path, text)
    before = open(path, "rb").read()
    with pytest.raises(Refused, match=re.escape(f"would take in the indented {line} as part of its text; move that comment")):
        FileStore(path).transact(change)
    assert open(path, "rb").read() == before


def test_a_new_unknown_key_never_takes_in_an_indented_comment(tmp_path):
    path = write(tmp_path, "task: t\nowner_shift: ops\n  # about the shift\ntargets:\n  a: {state: done}\n")
    store = FileStore(path)
    try:
        store.transact(lambda ledger: setattr(ledger, "x", "line one\nline two\n"))
    except Refused as refused:
        assert "would take in the indented line" in str(refused)
        return
    assert store.read().model_dump() == FileStore(path).read().model_dump()
