"""`handoff show --at REV` rebuilds the whole ledger file as it was written at REV, from the journal.

A file ledger with comments, unknown keys and a runbook is changed by real `handoff`
processes (a note, two sessions, an approval, a pause and its lifting) and by a hand
edit in between; the file's content is kept after each command. Then `show --at` of
each kept revision, parsed as YAML, equals the file as it was (every field, not only the
targets' states), every revision of the runs in between rebuilds a valid ledger that
agrees with the journal's transitions, and a rebuild that cannot be trusted (a journal
record changed, a write's record missing) says so and exits 1.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from engine.store import history
from engine.store.history import ledger_at
from tests.conftest import handoff

LEDGER = """\
# the fleet: a comment the journal does not keep (it keeps the content)
task: rebuild
owner_shift: test-oncall
site_notes: {kept: [1, 2], by: hand}
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
  - {name: link, from: checked, to: done, run: ["echo", "{target}"]}
targets:
  db-1: {state: queued, owner: alice}   # an unknown key on a target
  db-2: {state: queued}
handoff_note: start here
"""


def _ok(*args) -> str:
    result = handoff(*args)
    assert result.returncode in (0,), (args, result.stdout, result.stderr)
    return result.stdout


def _content(ledger: Path) -> tuple[int, dict]:
    data = yaml.safe_load(ledger.read_text())
    return data.get("revision", 0), data


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def kept(tmp_path_factory) -> tuple[Path, dict[int, dict]]:
    """The ledger after every command, by revision: what `show --at` must give back."""
    ledger = tmp_path_factory.mktemp("travel") / "ledger.yaml"
    ledger.write_text(LEDGER)
    seen: dict[int, dict] = {}

    def keep() -> None:
        rev, data = _content(ledger)
        seen[rev] = data

    _ok("note", ledger, "--set", "db-1 first; \x1b[31mred\x1b[0m stays text", "--as", "alice"); keep()
    _ok("resume", ledger); keep()  # checks both, gates link on both
    _ok("approve", ledger, "db-1", "--as", "alice"); keep()
    # A hand edit (a field no step writes), no revision bump; the next engine write
    # starts from it, so the journal takes the whole ledger again.
    ledger.write_text(ledger.read_text().replace("site_notes: {kept: [1, 2], by: hand}", "site_notes: {kept: [3], by: bob}"))
    _ok("pause", ledger, "--reason", "change freeze", "--as", "bob"); keep()
    _ok("unpause", ledger, "--as", "bob"); keep()
    _ok("resume", ledger); keep()  # runs link on db-1
    return ledger, seen


def _show(ledger: Path, rev: int, *more: str):
    return handoff("show", ledger, "--at", str(rev), *more)


def test_show_at_each_kept_revision_is_the_file_as_it_was(kept) -> None:
    ledger, seen = kept
    assert len(seen) == 6 and len(set(seen)) == 6
    for rev, data in seen.items():
        shown = _show(ledger, rev)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"# {ledger} at revision {rev}, rebuilt from its history journal (records seq ")
        assert yaml.safe_load(shown.stdout) == data, rev  # every field: the note, site_notes, runbook, unknown keys
        as_json = json.loads(_show(ledger, rev, "--json").stdout)
        assert as_json["ledger"] == data and as_json["written"] == rev and as_json["why"] is None
    first, last = min(seen), max(seen)
    assert seen[first]["site_notes"] == {"kept": [1, 2], "by": "hand"}
    assert seen[last]["site_notes"] == {"kept": [3], "by": "bob"} and seen[last]["targets"]["db-1"]["state"] == "done"


def test_every_revision_in_between_is_a_valid_ledger_that_agrees_with_the_journal(kept) -> None:
    from engine.ledger.model import Ledger

    ledger, seen = kept
    writes = [json.loads(line) for line in Path(f"{ledger}{history.SUFFIX}").read_text().splitlines()]
    records = [*writes, *(json.loads(line) for line in Path(f"{ledger}.journal.jsonl").read_text().splitlines())]
    assert {r["kind"] for r in writes} == {history.KIND} and history.KIND not in {r["kind"] for r in records[len(writes):]}
    assert [r["rev"] for r in writes] == list(range(1, max(seen) + 1))  # every write journaled, in order
    assert sum("full" in r for r in writes) == 2  # the first write, and the first after the hand edit
    for rev in range(1, max(seen) + 1):
        then = ledger_at(records, rev)
        assert then.data is not None and then.data["revision"] == rev, then.why
        Ledger.model_validate(then.data)  # a whole, valid ledger
        for r in records:
            if r["kind"] == "transition" and r.get("rev") == rev and r.get("target") and r.get("to"):
                assert then.data["targets"][r["target"]]["state"] == r["to"], (rev, r["msg"])
    assert ledger_at(records, max(seen)).data == _content(ledger)[1]  # the head is the file


def test_ledger_text_stays_data_on_the_terminal(kept) -> None:
    ledger, seen = kept
    out = _show(ledger, min(seen)).stdout
    assert "\x1b" not in out and "red" in out  # the escape sequence in the note is shown, never sent


def test_revision_zero_was_never_written_by_the_engine_and_says_so(kept) -> None:
    ledger, _ = kept
    shown = _show(ledger, 0)
    assert shown.returncode == 0, shown.stderr
    assert "the whole ledger cannot be rebuilt: the journal holds no copy of the whole ledger at or before this revision" \
        in shown.stdout
    assert json.loads(_show(ledger, 0, "--json").stdout)["ledger"] is None


def test_diff_names_every_field_that_changed(kept) -> None:
    ledger, seen = kept
    revs = sorted(seen)
    diff = handoff("diff", ledger, str(revs[2]), str(revs[3]))  # across the hand edit and the pause
    assert diff.returncode == 0, diff.stderr
    out = diff.stdout
    assert "(the whole ledger, rebuilt from the journal)" in out
    assert 'site_notes.kept: [1, 2] -> [3]' in out and "site_notes.by: hand -> bob" in out
    assert "paused: (none) -> " in out


def test_an_edited_write_record_is_not_trusted(kept, tmp_path: Path) -> None:
    ledger, seen = kept
    copy = tmp_path / "ledger.yaml"
    for suffix in ("", ".journal.jsonl", ".last-write.json", history.SUFFIX):
        Path(f"{copy}{suffix}").write_bytes(Path(f"{ledger}{suffix}").read_bytes())
    journal = Path(f"{copy}{history.SUFFIX}")
    lines = journal.read_text().splitlines(keepends=True)
    [at] = [i for i, line in enumerate(lines) if '"kind":"ledger_write"' in line and '"rev":1,' in line]
    lines[at] = lines[at].replace('"by":"hand"', '"by":"evil"', 1)  # same length: only the hash can tell
    assert '"by":"evil"' in lines[at]
    journal.write_text("".join(lines))
    before = _files(tmp_path)
    assert handoff("diff", copy, "1", "2").returncode == 1
    shown = _show(copy, 1)
    assert shown.returncode == 1
    assert f"line {at + 1} (seq " in shown.stderr and "the journal's chain is broken" in shown.stderr, shown.stderr
    assert "handoff journal" in shown.stderr and "--verify" in shown.stderr
    assert _files(tmp_path) == before  # read-only: nothing written


def _records(*writes: tuple[int, dict, dict, int | None]) -> list[dict]:
    out = []
    for seq, (rev, before, after, base) in enumerate(writes):
        out.append({"kind": history.KIND, "rev": rev, "seq": seq, **history.fields(before, after, None, base)})
    return out


def test_a_write_whose_base_is_missing_is_a_gap_never_a_guess() -> None:
    one = {"task": "t", "revision": 1, "targets": {"a": {"state": "queued"}}}
    two = {**one, "revision": 2, "targets": {"a": {"state": "checked"}}}
    three = {**one, "revision": 3, "targets": {"a": {"state": "done"}}}
    records = _records((1, {}, one, None), (3, two, three, 2))  # revision 2's record is lost
    assert ledger_at(records, 1).data == one
    lost = ledger_at(records, 3)
    assert lost.data is None and lost.gap
    assert "changes revision 2, which the journal does not hold (it holds revision 1)" in lost.why
    # A revision other records name but whose write is not journaled is not rebuilt either.
    named = ledger_at([*_records((1, {}, one, None)), {"kind": "transition", "rev": 2, "seq": 9}], 2)
    assert named.data is None and named.gap and "revision 2 is named in the journal but its write was not journaled" \
        in named.why
    # A whole copy after the loss makes the later revisions whole again.
    again = _records((1, {}, one, None), (3, two, three, 2), (4, {}, {**three, "revision": 4}, None))
    assert ledger_at(again, 4).data == {**three, "revision": 4} and not ledger_at(again, 4).gap


def test_removed_targets_and_keys_are_removed() -> None:
    one = {"task": "t", "revision": 1, "paused": {"by": "bob"}, "targets": {"a": {"state": "queued"}, "b": {"state": "queued"}}}
    two = {"task": "t", "revision": 2, "targets": {"b": {"state": "queued"}, "c": {"state": "queued"}}}
    records = _records((1, {}, one, None), (2, one, two, 1))
    assert records[1]["unset"] == ["paused"] and records[1]["removed"] == ["a"]
    assert ledger_at(records, 2).data == two
