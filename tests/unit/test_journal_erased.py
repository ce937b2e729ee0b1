"""A journal erased with its index (`rm ledger.yaml.journal.jsonl*`) and the last-write record
deleted: the ledger says revision 2 and the history file holds its writes, but the journal that
recorded them is gone. `handoff check` and `handoff journal --verify` must say so."""

from __future__ import annotations

from pathlib import Path

from engine.audit.journal import journal_path
from tests.conftest import handoff


def test_an_erased_journal_and_last_write_record_leave_a_trace(article: Path) -> None:
    for text in ("first", "second"):
        assert handoff("note", article, "--set", text, "--as", "bob").returncode == 0
    journal = Path(journal_path(str(article)))
    assert journal.stat().st_size > 0
    assert handoff("check", article).returncode == 0
    assert handoff("journal", article, "--verify").returncode == 0

    for path in article.parent.iterdir():
        if path.name.startswith(journal.name) or path.name == article.name + ".last-write.json":
            path.unlink()  # rm ledger.yaml.journal.jsonl* ledger.yaml.last-write.json
    assert "revision: 2" in article.read_text()

    check = handoff("check", article)
    verify = handoff("journal", article, "--verify")
    said = check.stdout + check.stderr
    assert check.returncode != 0 and "journal" in said, f"check sees nothing:\n{said}"
    assert verify.returncode != 0, f"verify calls the erased journal fine:\n{verify.stdout}{verify.stderr}"
