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


def test_a_placed_record_is_the_same_bytes_as_encoding_it_whole():
    """The line after a record gets its place reuses the bytes made before (a full ledger's
    record is megabytes): they equal `encode` of the sealed record, whatever its keys,
    including records that already held a `seq`, `prev` or `chain`, or nothing at all."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from engine.audit.chain import seal
    from engine.audit.journal_io import encode, encode_placed

    keys = st.sampled_from(["kind", "msg", "seq", "prev", "chain", "rev", "é", "full"])
    values = st.recursive(st.none() | st.integers() | st.text(max_size=5), lambda v: st.lists(v, max_size=3)
                          | st.dictionaries(st.text(max_size=3), v, max_size=3), max_leaves=6)

    @settings(max_examples=400, deadline=None)
    @given(st.dictionaries(keys, values, max_size=6), st.integers(0, 10**9), st.text(max_size=8))
    def check(record, seq, prev):
        before, keys_before = encode(record), len(record)
        record["seq"] = seq
        sealed = seal(record, prev)
        assert encode_placed(before, sealed, keys_before) == encode(sealed)
        assert json.loads(encode_placed(before, sealed, keys_before)) == sealed

    check()


def test_the_journal_line_of_a_whole_ledger_is_what_it_holds(tmp_path: Path):
    """Through `Journal.append`: each line reads back as its record, and the chain holds."""
    path, _ = _small(tmp_path, 3)
    j = Journal(str(path))
    record = j.append("ledger_write", "revision 4", actor="engine", rev=4, full={"targets": {"db-1": {"state": "done"}}})
    lines = _lines(path)
    assert json.loads(lines[-1]) == record and record["full"]["targets"]["db-1"] == {"state": "done"}
    assert not verify_file(str(path), journal_head(str(path))).breaks
