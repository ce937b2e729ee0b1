"""The journal loses nothing: records start on a line boundary, `tail`/`last_of` read whole
records from any window, warnings stay bounded, and `seq` is unique and increasing
when several processes append at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from engine.audit.journal import MAX_WARNINGS, Journal
from tests.conftest import ROOT, handoff


def _journal(tmp_path) -> Journal:
    return Journal(str(tmp_path / "l.yaml.journal.jsonl"))


def test_append_after_a_torn_line_starts_a_new_line(tmp_path):
    """After a crash left half a line, the next record is not glued onto it: it reads back."""
    journal = _journal(tmp_path)
    journal.append("log", "one", actor="s")
    with open(journal.path, "ab") as fh:
        fh.write(b'{"ts":"2026-09-10T02:11:04Z","kind":"log","msg":"tw')
    paused = journal.append("pause", "ledger paused by alice", actor="alice", rev=7)
    records, _ = journal.read(0)
    assert [r["kind"] for r in records] == ["log", "pause"]
    assert records[1]["seq"] == paused["seq"]  # seq is where the record really starts
    assert any("damaged" in w for w in journal.warnings)  # the torn half is reported, once


def test_cli_pause_after_a_torn_line_is_in_the_journal(fleet):
    """The reproduced loss: the ledger said paused, the journal had no pause record."""
    assert handoff("note", fleet, "--set", "first").returncode == 0
    path = str(fleet) + ".journal.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"ts":"2026-09-10T02:11:04Z","kind":"log","msg":"half')
    assert handoff("pause", fleet, "--reason", "error budget").returncode == 0
    result = handoff("journal", fleet, "--json")
    kinds = [json.loads(line)["kind"] for line in result.stdout.splitlines()]
    assert kinds == ["note", "pause"]


def _fill(journal: Journal, count: int, size: int = 300) -> list[dict]:
    out = []
    for i in range(count):
        out.append(journal.append("log", f"record {i} " + "x" * size, actor="s", n=i))
    return out


def test_tail_starting_mid_line_warns_about_nothing_and_keeps_every_whole_record(tmp_path):
    """A read window that starts inside a line skips that piece silently; the records after it are all there."""
    journal = _journal(tmp_path)
    _fill(journal, 400)  # ~140 KB, larger than tail's 64 KiB window
    size = os.path.getsize(journal.path)
    whole, _ = journal.read(0)
    journal.warnings.clear()
    for n in (5, 40, 150, 1000):
        got = journal.tail(n)
        window_start = max(0, size - max(65536, n * 2048))
        expected = [r for r in whole if r["seq"] >= window_start][-n:]
        assert [r["n"] for r in got] == [r["n"] for r in expected], n
    assert list(journal.warnings) == []


def _fixed_lines(path: str, count: int, width: int = 256) -> None:
    """A journal of `count` records, each line exactly `width` bytes (newline included)."""
    with open(path, "wb") as fh:
        for i in range(count):
            line = json.dumps({"ts": "2026-09-10T02:11:04Z", "kind": "log", "actor": "s", "msg": "", "n": i}, separators=(",", ":"))
            line = line.replace('"msg":""', '"msg":"' + "x" * (width - 1 - len(line)) + '"')
            assert len(line) == width - 1
            fh.write(line.encode() + b"\n")


def test_tail_window_on_a_line_boundary_keeps_its_first_record(tmp_path):
    """When the window starts exactly where a record starts, that record is returned too."""
    journal = _journal(tmp_path)
    _fixed_lines(journal.path, 30, width=4096)  # 120 KiB: the 64 KiB window starts at record 14
    got = journal.tail(20)  # the window holds only 16 whole records
    assert [r["n"] for r in got] == list(range(14, 30))
    assert list(journal.warnings) == []


def test_last_of_finds_the_first_record_of_its_window(tmp_path):
    """`last_of` reads backwards in windows; a record right at a window's start is found, with no false warning."""
    journal = _journal(tmp_path)
    _fill(journal, 2000)  # ~650 KB: three windows of 256 KiB, 1 MiB
    size = os.path.getsize(journal.path)
    whole, _ = journal.read(0)
    # The first whole record in the 256 KiB window, made the only metric record.
    start = size - 256 * 1024
    first = next(r for r in whole if r["seq"] >= start)
    raw = bytearray(open(journal.path, "rb").read())
    line_end = raw.index(b"\n", first["seq"])
    line = json.loads(raw[first["seq"]:line_end])
    line["kind"] = "metric"
    new = json.dumps(line, separators=(",", ":")).encode()
    new = new + b" " * (line_end - first["seq"] - len(new))  # same length: offsets stay
    raw[first["seq"]:line_end] = new
    open(journal.path, "wb").write(bytes(raw))
    journal.warnings.clear()
    found = journal.last_of("metric")
    assert found is not None and found["n"] == first["n"]
    assert list(journal.warnings) == []


def test_warnings_stay_bounded_however_often_the_tui_polls(tmp_path):
    """A damaged line read every 2 s for a day must not grow `warnings` without bound."""
    journal = _journal(tmp_path)
    _fill(journal, 50)
    with open(journal.path, "ab") as fh:
        for i in range(3 * MAX_WARNINGS):
            fh.write(f"garbage line {i}\n".encode())
    journal.append("log", "after", actor="s")
    for _ in range(200):
        assert journal.last_of("log")["msg"] == "after"
        journal.tail(10)
    assert 0 < len(journal.warnings) <= MAX_WARNINGS
    assert len(set(journal.warnings)) == len(journal.warnings)


WRITER = """
import json, sys
from engine.audit.journal import Journal
path, who, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
journal = Journal(path)
seqs = [journal.append("log", f"{who} {i}", actor=who, i=i)["seq"] for i in range(count)]
open(out, "w").write(json.dumps(seqs))
"""


def test_seq_is_unique_and_increasing_under_concurrent_writers(tmp_path):
    """Six processes append 150 records each at once: every returned seq is the real offset of that record."""
    path = str(tmp_path / "l.yaml.journal.jsonl")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, path, f"w{k}", "150", str(tmp_path / f"seq{k}.json")], env=env)
        for k in range(6)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    records, _ = Journal(path).read(0)
    assert len(records) == 900
    offsets = [r["seq"] for r in records]
    assert offsets == sorted(set(offsets))
    by_offset = {r["seq"]: (r["actor"], r["i"]) for r in records}
    returned = []
    for k in range(6):
        seqs = json.loads((tmp_path / f"seq{k}.json").read_text())
        assert seqs == sorted(seqs)  # each writer's own records come in order
        assert [by_offset[s] for s in seqs] == [(f"w{k}", i) for i in range(150)]
        returned += seqs
    assert len(set(returned)) == 900


def test_read_skips_blank_lines_without_warning(tmp_path):
    """A newline written to end a torn tail before it was cut back is not a damaged record."""
    journal = _journal(tmp_path)
    journal.append("log", "one", actor="s")
    with open(journal.path, "ab") as fh:
        fh.write(b"\n")
    journal.append("log", "two", actor="s")
    records, _ = journal.read(0)
    assert [r["msg"] for r in records] == ["one", "two"] and list(journal.warnings) == []
