"""The journal is a hash chain: any record edited, removed, moved or erased is found, and where.

Real journal files written by the engine's own Journal, broken by hand the ways a person
or a script would (an editor, `sed`, a one-line `python3 -c`), then read back by
`verify_file` and by the `handoff journal --verify` and `handoff check` commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from session_kit import demo_copy, handoff, journal

from engine.audit.journal import Journal, journal_head
from engine.audit.verify import verify_file


def _small(tmp_path: Path, n: int = 6) -> tuple[Path, dict]:
    path = tmp_path / "l.yaml.journal.jsonl"
    j = Journal(str(path))
    for i in range(n):
        j.append("log", f"record {i}", actor="tester", rev=i + 1, target=f"db-{i}")
    return path, journal_head(str(path))


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_an_intact_journal_verifies(tmp_path: Path) -> None:
    """Every record sealed, each naming the one before; the head the last write names is there."""
    path, head = _small(tmp_path)
    verdict = verify_file(str(path), head)
    assert verdict.ok and verdict.records == verdict.sealed == 6, verdict.breaks


def test_a_break_at_every_position_is_found_at_that_position(tmp_path: Path) -> None:
    """Edited, removed, or swapped with the next: for each line of a 6-record journal, the first break is that line."""
    path, head = _small(tmp_path)
    lines = _lines(path)
    for i in range(len(lines)):
        edited = list(lines)
        edited[i] = edited[i].replace(b"record ", b"RECORD ")
        removed = lines[:i] + lines[i + 1:]
        cases = {"edited": edited, "removed": removed}
        if i + 1 < len(lines):
            cases["swapped"] = lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2:]
        for how, content in cases.items():
            path.write_bytes(b"".join(content))
            verdict = verify_file(str(path), head)
            assert not verdict.ok, (i, how)
            first = verdict.breaks[0]
            if how == "removed" and i == len(lines) - 1:
                assert first.line is None and "no longer has it" in first.why, (i, how, first)  # only the head knows
            else:
                assert first.line == i + 1, (i, how, first)
        path.write_bytes(b"".join(lines))


def test_a_torn_last_line_is_not_a_break_and_the_next_record_links_across_it(tmp_path: Path) -> None:
    """A crash mid-append leaves half a line: readers skip it, the chain goes on from the last whole record."""
    path, _ = _small(tmp_path, 3)
    with open(path, "ab") as fh:
        fh.write(b'{"ts":"2026-12-01T00:00:00Z","kind":"log","ms')
    Journal(str(path)).append("log", "after the crash", actor="tester")
    verdict = verify_file(str(path), journal_head(str(path)))
    assert verdict.ok and verdict.damaged == [4], (verdict.breaks, verdict.damaged)


def test_an_older_journal_is_accepted_and_sealed_from_its_next_record(tmp_path: Path) -> None:
    """Records without a hash are accepted up to the first sealed one; one added by hand after it is a break."""
    path = tmp_path / "l.yaml.journal.jsonl"
    old = [{"ts": "2026-11-30T10:00:00Z", "kind": "log", "actor": "old", "msg": f"old {i}"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    Journal(str(path)).append("log", "first sealed", actor="tester")
    verdict = verify_file(str(path))
    assert verdict.ok and verdict.unsealed == 3 and verdict.sealed == 1, verdict.breaks
    with open(path, "a") as fh:
        fh.write(json.dumps(old[0]) + "\n")
    verdict = verify_file(str(path))
    assert [b.line for b in verdict.breaks] == [5]


def _ledger_with_history(tmp_path: Path) -> tuple[Path, Path]:
    ledger = demo_copy(tmp_path, {"db-50": {"state": "checked"}, "db-51": {"state": "queued"}})
    world = tmp_path / "world"
    for args in (("pause", "--reason", "setup"), ("unpause",), ("note", "--set", "db-50 next")):
        done = handoff(args[0], str(ledger), *args[1:], "--as", "alice", world=world)
        assert done.returncode == 0, done.stderr
    return ledger, world


def test_a_one_line_python_erasing_the_journal_is_detected_by_verify_check_and_the_next_append(tmp_path: Path) -> None:
    """The journal emptied by `python3 -c`: verify exits 1 naming the lost head, check calls it a problem, the next record notes the break."""
    ledger, world = _ledger_with_history(tmp_path)
    path = Path(str(ledger) + ".journal.jsonl")
    assert handoff("journal", str(ledger), "--verify", world=world).returncode == 0
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'w').close()"], check=True)
    before = ledger.read_bytes()
    verify = handoff("journal", str(ledger), "--verify", world=world)
    assert verify.returncode == 1 and "no longer has it" in verify.stdout and "BROKEN" in verify.stdout, verify.stdout
    check = handoff("check", str(ledger), world=world)
    assert check.returncode == 1 and "journal chain broken" in check.stdout, check.stdout
    assert ledger.read_bytes() == before  # reading never writes
    assert handoff("pause", str(ledger), "--reason", "after", "--as", "bob", world=world).returncode == 0
    records = journal(ledger)
    assert records[0]["kind"] == "chain_break" and "erased" in records[0]["msg"], records[:2]
    again = handoff("journal", str(ledger), "--verify", world=world)
    assert again.returncode == 1 and "noted by the engine" in again.stdout  # noted, never forgotten


def test_sed_editing_a_record_is_found_at_its_line(tmp_path: Path) -> None:
    """`sed -i` turning alice into mallory in one record: verify names that line and seq, exit 1."""
    ledger, world = _ledger_with_history(tmp_path)
    path = Path(str(ledger) + ".journal.jsonl")
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "paused by alice" in text)
    subprocess.run(["sed", "-i", f"{line}s/paused by alice/paused by mallory/", str(path)], check=True)
    verify = handoff("journal", str(ledger), "--verify", world=world)
    assert verify.returncode == 1, verify.stdout
    assert f"line {line} (seq " in verify.stdout and "changed after it was written" in verify.stdout


def test_a_sealed_line_is_its_records_canonical_bytes_then_its_place():
    """Whatever the record's keys and values (including a `seq`, `prev` or `chain` it held
    already): the line drafted before the lock and finished under it is the line made
    whole; it reads back as the sealed record, whose chain is the hash a decoding reader
    computes; `sealed_tail` finds its offset, seq and chain without decoding it, and finds
    nothing once any byte of the record's part of the line is changed."""
    import copy
    import tempfile

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from engine.audit.chain import chain_hash, draft, sealed_line
    from engine.audit.tail import sealed_tail

    keys = st.sampled_from(["kind", "msg", "seq", "prev", "chain", "rev", "é", "full", "ts"])
    values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                          lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=3), v, max_size=3),
                          max_leaves=6)

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(keys, values, max_size=6), st.integers(0, 10**12), st.sampled_from(["genesis", "a" * 64, "é\"x"]),
           st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"), st.data())
    def check(record, seq, prev, before, data):
        whole = copy.deepcopy(record)
        line = sealed_line(record, prev, seq, draft(record))
        assert line == sealed_line(whole, prev, seq) and record == whole
        assert json.loads(line) == record and record["prev"] == prev and record["seq"] == seq
        assert record["chain"] == chain_hash(json.loads(line))
        with tempfile.TemporaryFile() as fh:
            fh.write(before + line)
            fh.flush()
            assert sealed_tail(fh.fileno(), len(before + line)) == (len(before), seq, record["chain"])
            at = data.draw(st.integers(0, line.rindex(b',"seq":') - 1))
            changed = line[:at] + bytes([line[at] ^ 0x01]) + line[at + 1:]
            fh.seek(0)
            fh.truncate()
            fh.write(before + changed)
            fh.flush()
            assert sealed_tail(fh.fileno(), len(before + changed)) is None
            assert sealed_tail(fh.fileno(), len(before + changed) - 1) is None  # no whole line at the end

    check()


def _last_line_edited(path: Path, edit) -> None:
    lines = _lines(path)
    path.write_bytes(b"".join(lines[:-1]) + edit(lines[-1]))


def test_a_last_record_changed_by_hand_is_noted_at_the_next_append(tmp_path: Path) -> None:
    """The next writer checks the journal's last record by hashing its line: a word changed in it
    is a `chain_break` record before the new one, saying the last record was changed."""
    path, _ = _small(tmp_path)
    _last_line_edited(path, lambda line: line.replace(b"record 5", b"record 9"))
    Journal(str(path)).append("log", "after the edit", actor="tester")
    records = [json.loads(line) for line in _lines(path)]
    assert [r["kind"] for r in records[-2:]] == ["chain_break", "log"], records[-2:]
    assert "its last record (seq " in records[-2]["msg"] and "was changed after it was written" in records[-2]["msg"]


def test_a_last_record_moved_by_hand_is_noted_at_the_next_append(tmp_path: Path) -> None:
    """Its line intact but earlier bytes gone: the `seq` it carries is not where it is."""
    path, _ = _small(tmp_path)
    lines = _lines(path)
    path.write_bytes(b"".join(lines[:-2]) + lines[-1])  # the record before it removed
    Journal(str(path)).append("log", "after the edit", actor="tester")
    records = [json.loads(line) for line in _lines(path)]
    assert records[-2]["kind"] == "chain_break" and "is at byte" in records[-2]["msg"], records[-2:]


def test_a_last_record_in_another_layout_is_read_as_json(tmp_path: Path) -> None:
    """The same record written in another key order (an older engine's lines, a script that
    re-encoded the journal): not a break, and the next record follows it."""
    path, _ = _small(tmp_path)
    _last_line_edited(path, lambda line: (json.dumps(dict(reversed(list(json.loads(line).items())))) + "\n").encode())
    Journal(str(path)).append("log", "after the re-encoding", actor="tester")
    records = [json.loads(line) for line in _lines(path)]
    assert [r["kind"] for r in records[-2:]] == ["log", "log"], records[-2:]
    assert records[-1]["prev"] == records[-2]["chain"]
    assert verify_file(str(path), journal_head(str(path))).ok


def test_the_journal_line_of_a_whole_ledger_is_what_it_holds(tmp_path: Path):
    """Through `Journal.append`: each line reads back as its record, and the chain holds."""
    path, _ = _small(tmp_path, 3)
    j = Journal(str(path))
    record = j.append("ledger_write", "revision 4", actor="engine", rev=4, full={"targets": {"db-1": {"state": "done"}}})
    lines = _lines(path)
    assert json.loads(lines[-1]) == record and record["full"]["targets"]["db-1"] == {"state": "done"}
    assert not verify_file(str(path), journal_head(str(path))).breaks
