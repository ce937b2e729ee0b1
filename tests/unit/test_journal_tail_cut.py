"""The journal cut short by its last write's records (`sed -i '$d' ledger.yaml.journal.jsonl`)
leaves a trace: the ledger's last-write record names the journal's head as it was before the
write's own records were appended, so the cut leaves that head in place, but the record also
says which revision the write made, and every engine write journals a record of its revision.
`handoff check` and `handoff journal --verify` both call it a break (a review found both saying
fine: a note with the reviewer's findings, or a hand edit's `external_edit` record, gone)."""

from __future__ import annotations

from pathlib import Path

from engine.audit.journal import journal_path
from tests.conftest import handoff


def _drop_last_records(journal: Path, count: int) -> None:
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    journal.write_text("".join(lines[:-count]), encoding="utf-8")


def test_the_last_writes_record_cut_off_leaves_a_trace(article: Path) -> None:
    for text in ("first", "second", "db-18 done."):  # the last one has a reviewer finding on its record
        assert handoff("note", article, "--set", text, "--as", "bob").returncode == 0
    journal = Path(journal_path(str(article)))
    assert handoff("journal", article, "--verify").returncode == 0
    _drop_last_records(journal, 1)
    assert "revision: 3" in article.read_text()

    check, verify = handoff("check", article), handoff("journal", article, "--verify")
    assert check.returncode != 0 and "journal" in check.stdout + check.stderr, f"check sees nothing:\n{check.stdout}{check.stderr}"
    assert verify.returncode != 0, f"verify calls the cut journal fine:\n{verify.stdout}{verify.stderr}"


def test_a_hand_edits_record_cut_off_with_the_write_that_took_it_in_leaves_a_trace(article: Path) -> None:
    assert handoff("note", article, "--set", "first", "--as", "bob").returncode == 0
    article.write_text(article.read_text().replace("db-20: {state: blocked,", "db-20: {state: queued,"))
    assert handoff("note", article, "--set", "second", "--as", "bob").returncode == 0
    journal = Path(journal_path(str(article)))
    kinds = [line.split('"kind":"', 1)[1].split('"', 1)[0] for line in journal.read_text().splitlines()]
    assert kinds[-2:] == ["external_edit", "note"]
    _drop_last_records(journal, 2)

    check, verify = handoff("check", article), handoff("journal", article, "--verify")
    assert check.returncode != 0 or verify.returncode != 0, (
        f"the hand edit and its record are gone without a trace:\n{check.stdout}{check.stderr}{verify.stdout}")
