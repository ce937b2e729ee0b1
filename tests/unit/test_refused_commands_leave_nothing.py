"""A refused command leaves nothing behind: no empty journal beside a ledger that had none,
no report on stdout when `-o` names no file. One line says why; the ledger's bytes stay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RUNBOOK_LEDGER, handoff

REFUSED = {
    # name: (argv after the ledger, words in the one line it prints, exit code)
    "unapprove-nothing": (["unapprove", "db-2"], "db-2 holds no unused approval to withdraw", 1),
    # A name the ledger does not have is a usage error (tests/unit/test_no_such_target.py): exit 2.
    "reject-unknown": (["reject", "db-9", "--reason", "lag"], "no target named 'db-9'", 2),
    "block-unknown": (["block", "db-9", "--reason", "hold"], "no target named 'db-9'", 2),
    "retry-unknown": (["retry", "db-9"], "no target named 'db-9'", 2),
    "unblock-unknown": (["unblock", "db-9", "--to", "queued", "--reason", "fixed"], "no target named 'db-9'", 2),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_a_refused_change_on_a_ledger_without_a_journal_leaves_no_journal(tmp_path: Path, case: str) -> None:
    """The first command ever run on a fresh ledger is refused: exit 1 (2: usage), one line, and the
    folder holds what it held (an empty journal would say the engine had recorded something)."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    before = path.read_bytes()
    argv, words, code = REFUSED[case]
    result = handoff(argv[0], path, *argv[1:], "--as", "bob")
    assert result.returncode == code, result.stdout + result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == before
    assert not (tmp_path / "fleet.yaml.journal.jsonl").exists(), sorted(p.name for p in tmp_path.iterdir())


def test_a_change_that_goes_through_still_creates_the_journal(tmp_path: Path) -> None:
    """The journal a refused change no longer creates is created by the first change that is made."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    result = handoff("block", path, "db-5", "--reason", "hold", "--as", "bob")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (tmp_path / "fleet.yaml.journal.jsonl").read_text("utf-8").splitlines()]
    assert [(r["kind"], r["target"], r["reason"]) for r in records] == [("block", "db-5", "hold")]


def test_report_to_an_empty_file_name_is_refused(tmp_path: Path) -> None:
    """`-o ""` (a variable that was empty) names no file: refused, exit 2, not the report on stdout."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    result = handoff("report", path, "-o", "")
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.strip() == ("handoff: argument -o/--output: names no file; give a file name, or leave -o out "
                                     "to print (nothing was written) (see `handoff report --help`)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yaml"]
