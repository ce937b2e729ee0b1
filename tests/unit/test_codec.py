"""The codec: the article's ledger loads unchanged, writes are canonical and diff-minimal,
YAML 1.1 surprises stay strings, and the fast reader covers what the emitter writes."""

from __future__ import annotations

import difflib

import pytest
import yaml

from engine.codec import strict
from engine.codec.canonical import emit_document
from engine.codec.document import parse_document
from engine.codec.fast import FastReader
from engine.errors import LedgerInvalid
from engine.ledger.model import Ledger
from engine.store.convert import to_data
from engine.store.file import FileStore
from tests.conftest import ARTICLE


def test_article_loads_unchanged():
    """The article's sample keeps every value as written: checkpoint and started stay strings, the folded note folds."""
    parsed = parse_document(ARTICLE, "ledger.yaml")
    data = parsed.data
    assert parsed.header == "# ledger.yaml (the agent's only source of truth)\n"
    assert data["started"] == "2026-09-09T14:00Z"
    assert data["targets"]["db-18"] == {
        "state": "replicating",
        "checkpoint": "0/9A3F2C10",
        "last_action": "pg_upgrade --link ok, logical replication started",
        "next_action": "verify lag < 5s then cutover",
    }
    assert data["handoff_note"] == (
        "Started db-18 at 01:58Z. Replication lag was 2.1s at 02:07Z. Do NOT retry pg_upgrade on db-18, "
        "the --link step is irreversible. Nothing else is in flight.\n"
    )
    assert list(data["targets"]) == ["db-17", "db-18", "db-19", "db-20"]
    ledger = Ledger.model_validate(data)
    assert ledger.targets["db-18"].checkpoint == "0/9A3F2C10"
    assert ledger.started == "2026-09-09T14:00Z"


def test_article_agrees_with_a_plain_yaml_reader():
    """Our reading of the article's ledger equals libyaml's safe loader's."""
    ours = parse_document(ARTICLE, "ledger.yaml").data
    theirs = yaml.load(ARTICLE, Loader=yaml.CSafeLoader)
    assert ours == theirs


def test_article_round_trips(article):
    """Written by the engine and read back, the article's ledger holds the same data and keeps its comment."""
    store = FileStore(str(article))
    before = to_data(store.read())
    store.transact(lambda ledger: None)
    text = article.read_text()
    assert text.startswith("# ledger.yaml (the agent's only source of truth)\n")
    after = to_data(FileStore(str(article)).read())
    before.pop("revision", None)
    assert after.pop("revision") == 1
    assert after == before


def test_yaml_language_server_line_is_kept(tmp_path):
    """A leading comment block with a yaml-language-server line survives the first engine write."""
    path = tmp_path / "l.yaml"
    head = "# yaml-language-server: $schema=./ledger.schema.json\n# second comment line\n\n"
    path.write_text(head + "task: t\ntargets:\n  a: {state: queued}\n")
    FileStore(str(path)).transact(lambda ledger: None)
    assert path.read_text().startswith("# yaml-language-server: $schema=./ledger.schema.json\n# second comment line\n")


def _changed_lines(old: str, new: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_changing_one_target_changes_only_its_lines_and_revision(article):
    """After a first write (which adds `revision`), changing db-19 changes db-19's line and `revision`, nothing else."""
    store = FileStore(str(article))
    store.transact(lambda ledger: None)
    before = article.read_text()

    def change(ledger):
        ledger.targets["db-19"].state = "checked"

    store.transact(change)
    after = article.read_text()
    changed = _changed_lines(before, after)
    assert changed == [
        "-revision: 1",
        "+revision: 2",
        "-  db-19: {state: queued}",
        "+  db-19: {state: checked}",
    ]


def test_changing_a_wrapped_target_changes_only_its_lines(tmp_path):
    """A long target written over several lines is rewritten alone when it changes."""
    path = tmp_path / "l.yaml"
    long = "x" * 120
    targets = {"a": {"state": "queued"}, "b": {"state": "queued", "last_action": long, "next_action": long}, "c": {"state": "done"}}
    path.write_text(emit_document({"task": "t", "targets": targets})[0])
    store = FileStore(str(path))
    store.transact(lambda ledger: None)
    before = path.read_text()
    assert before.count("\n") > 6  # b is wrapped

    def change(ledger):
        ledger.targets["b"].next_action = "short"

    store.transact(change)
    changed = _changed_lines(before, path.read_text())
    assert all(line[1:].startswith(("revision:", "  b:", "     ")) for line in changed), changed


def test_yaml11_surprises_stay_strings():
    """Target names `no`, `on`, `012` and values like `12:30:00`, `0/9A3F2C10`, `yes` stay strings."""
    text = (
        "task: t\ntargets:\n"
        "  no: {state: queued, checkpoint: 12:30:00}\n"
        "  on: {state: queued, checkpoint: 0/9A3F2C10}\n"
        "  012: {state: queued, checkpoint: 0x1F}\n"
        "  yes:\n    state: queued\n    checkpoint: 1_000\n"
    )
    data = parse_document(text, "l.yaml").data
    assert data["targets"] == {
        "no": {"state": "queued", "checkpoint": "12:30:00"},
        "on": {"state": "queued", "checkpoint": "0/9A3F2C10"},
        "012": {"state": "queued", "checkpoint": "0x1F"},
        "yes": {"state": "queued", "checkpoint": "1_000"},
    }


def test_emitter_quotes_what_yaml11_tools_would_misread():
    """The emitter's output reads back as strings in a YAML 1.1 tool too (no bare `no`, `012`, `12:30:00`)."""
    data = {"task": "t", "targets": {name: {"state": "queued", "checkpoint": name} for name in ("no", "on", "012", "12:30:00", "null", "1e3", "~")}}
    text, _ = emit_document(data)
    theirs = yaml.load(text, Loader=yaml.CSafeLoader)
    assert theirs == data
    assert parse_document(text, "l.yaml").data == data


def test_fast_reader_takes_the_emitters_wrapped_targets():
    """A target the emitter wraps over several lines is read by the fast reader, not sent to the YAML loader."""
    target = {"state": "done", "checkpoint": "3/5D9DC9F8", "last_action": "cutover done, app pointed at pg16 primary " * 2,
              "approvals": [{"by": "alice", "user": "alice", "at": "2026-09-12T03:03Z", "step": "cutover"}]}
    text, _ = emit_document({"task": "t", "targets": {"db-1": target, "db-2": {"state": "queued"}}})
    block = text.split("targets:\n", 1)[1].rstrip("\n").split("\n")
    assert len(block) > 2
    targets, line_text, slow, _ = FastReader().read_lines(block)
    assert slow == []
    assert targets["db-1"] == target
    assert line_text["db-1"] == "\n".join(block[:-1])


def test_wrapped_target_errors_point_at_the_right_line():
    """An error inside a non-canonical target after many targets names the file's own line."""
    rows = [f"  t{i}: {{state: queued}}" for i in range(50)]
    rows.append("  bad:\n    state: queued\n    state: done")
    text = "task: t\ntargets:\n" + "\n".join(rows) + "\n"
    with pytest.raises(LedgerInvalid) as caught:
        parse_document(text, "l.yaml")
    assert str(caught.value).startswith("l.yaml:55:5: duplicate key 'state'"), str(caught.value)


def test_strict_loader_is_yaml12_core():
    """Only true/false, null, decimal ints and floats are typed; everything else is a string."""
    assert strict.load("[true, no, on, off, 012, 0o17, 0x1F, 12:30:00, 2026-09-09, 1.5, -3, ~, null]", "x") == [
        True, "no", "on", "off", "012", "0o17", "0x1F", "12:30:00", "2026-09-09", 1.5, -3, None, None
    ]


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_a_line_break_only_yaml_counts_never_breaks_the_reading(tmp_path, char):
    """U+2028, U+2029 and NEL are line breaks to libyaml, not to a split on newlines: a file
    holding one raw (PyYAML writes them so with allow_unicode) reads as the strict loader
    reads it, and a write keeps every value (it was an IndexError, or the wrong lines)."""
    # As hypothesis found it: the break in a key of the last target, a long value wrapped after it.
    data = {"task": "t", "targets": {"a": {"state": "queued"},
                                     "b": {"state": "queued", "approvals": [dict.fromkeys(("by", "user", "at", "step", "hash"), "no")],
                                           "no": {char: "0" * 150 + " 0"}}}}
    text = yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)
    assert char in text
    assert parse_document(text, "l.yaml").data == strict.load(text, "l.yaml")
    path = tmp_path / "l.yaml"
    path.write_text(text, encoding="utf-8")
    store = FileStore(str(path))
    store.transact(lambda ledger: setattr(ledger.targets["a"], "state", "done"))
    after = parse_document(path.read_text(encoding="utf-8"), "l.yaml").data
    assert after["targets"] == {**strict.load(text, "l.yaml")["targets"], "a": {"state": "done"}}  # NEL folds, as YAML says


def test_a_quoted_value_whose_next_line_starts_with_a_hash_is_read():
    """PyYAML wraps a long double-quoted value with `\\` line ends; a next line that starts with
    `#` is part of it, not a comment: the document reads as the strict loader reads it."""
    text = ('task: t\ntargets:\n    db-1:\n        state: queued\n        x: {note: "first part\\\n'
            '            #second part"}\n')
    assert parse_document(text, "l.yaml").data == strict.load(text, "l.yaml")
    assert strict.load(text, "l.yaml")["targets"]["db-1"]["x"] == {"note": "first part#second part"}


def test_the_fast_readers_caches_stay_bounded_and_right(monkeypatch):
    """A long-lived reader (a TUI watching for days) sees new checkpoints and numbers with
    every change: its caches start again past their limit, and reading stays right."""
    from engine.codec import fast

    monkeypatch.setattr(fast, "CACHE_LIMIT", 8)
    reader = FastReader()
    # New runs (checkpoints, durations) on every line, and new shapes (one more field each line).
    lines = [f"  db-{i:03d}: {{state: done, checkpoint: C/{i:08X}, evidence: {{exit_code: 0, duration: {i}.5}}"
             + "".join(f", f{k}: {k}" for k in range(i % 30)) + "}" for i in range(60)]
    targets, _, slow, _ = reader.read_lines(lines)
    assert not slow
    assert targets == strict.load("targets:\n" + "\n".join(lines) + "\n", "l.yaml")["targets"]
    assert len(reader._segments) <= 9 and len(reader.by_shape._runs) <= 9 + 8 and len(reader.by_shape._shapes) <= 9
