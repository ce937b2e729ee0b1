"""`handoff note LEDGER --set -`, run as a real process on the article's ledger (db-17 done,
db-18 replicating, db-19 queued, db-20 blocked) and on the small fleet (db-1 awaits approval of
cutover): a note the ledger contradicts is named by the reviewer; a true note is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import handoff

# The article's blocked target named and its previous note's rule kept, so only the claim is judged.
BLOCKED = "db-20 blocked (PLAT-4412). Do NOT retry pg_upgrade on db-18, the --link step is irreversible.\n"

FALSE_NOTES = {
    "upper case": "DB-19 done.",
    "no hyphen": "db19 done.",
    "space": "db 19 done.",
    "non-breaking hyphen": "db\u201119 done.",
    "markdown table": "| target | state |\n|---|---|\n| db-19 | done |",
    "bold name": "**db-19** done.",
    "code name": "`db-19` done.",
    "star list under Done:": "Done:\n* db-19",
    "numbered list under Done:": "Done:\n1. db-19",
    "markdown heading": "## Done\n- db-19",
    "negation of a done target": "db-17 is not done.",
    "negation of a blocked target": "db-20 is no longer blocked.",
    "range": "db-17..db-19 done.",
    "all": "All targets done.",
    "all verified": "All verified.",
    "count": "4 of 4 done.",
    "arrow": "db-19 -> done",
    "past tense of the work": "Finished the upgrade of db-19.",
}


@pytest.mark.parametrize("claim", list(FALSE_NOTES.values()), ids=list(FALSE_NOTES))
def test_a_false_note_is_named_by_the_reviewer(article: Path, claim: str) -> None:
    result = handoff("note", article, "--set", "-", "--as", "bob", input=BLOCKED + claim + "\n")
    assert result.returncode == 0, result.stderr
    assert "the reviewer found" in result.stdout, f"passed the review although false:\n{claim}\n{result.stdout}"


def test_nothing_in_flight_while_a_check_is_in_flight_is_named(tmp_path: Path, article: Path) -> None:
    text = article.read_text().replace(
        "db-19: {state: queued}",
        'db-19: {state: queued, in_flight: {step: check, host: bastion-1, pid: 4242, started_at: "2026-09-10T02:12:00Z"}}')
    assert text != article.read_text()
    article.write_text(text)
    unnamed = handoff("note", article, "--set", "-", "--as", "bob", input=BLOCKED + "Nothing in flight.\n")
    assert "db-19 has check in flight, but the note does not name it" in unnamed.stdout, unnamed.stdout  # it is in flight
    note = BLOCKED + "db-19 check was started at 02:12Z and has returned. Nothing in flight.\n"
    result = handoff("note", article, "--set", "-", "--as", "bob", input=note)
    assert result.returncode == 0, result.stderr
    assert "the reviewer found" in result.stdout, result.stdout


def test_no_approvals_pending_while_one_waits_is_named(fleet: Path) -> None:
    note = "db-1 cutover was asked for at 02:11Z. db-3 and db-4 failed. No approvals pending.\n"
    result = handoff("note", fleet, "--set", "-", "--as", "bob", input=note)
    assert result.returncode == 0, result.stderr
    assert "the reviewer found" in result.stdout, result.stdout


TRUE_NOTES = {
    "an instruction": "Next: cut over db-18 once lag < 5s.",
    "a question answered": "Is db-18 done? Not yet, still replicating.",
    "work to do": "Need to complete db-19 next shift.",
    # Of steps, not of the fleet: no whole-fleet claim.
    "all checks": "All checks completed on db-19; its link waits.",
    "a count of checks": "3 of 4 checks done on db-19.",
    "no approval step": "db-19 needs no approval for its check.",
}


@pytest.mark.parametrize("note", list(TRUE_NOTES.values()), ids=list(TRUE_NOTES))
def test_a_true_note_is_not_refused(article: Path, note: str) -> None:
    result = handoff("note", article, "--set", "-", "--as", "bob", input=BLOCKED + note + "\n")
    assert result.returncode == 0, result.stderr
    assert "the reviewer found" not in result.stdout, result.stdout


def test_control_the_plain_spelling_is_named(article: Path) -> None:
    """Passes today: the harness tells a flagged note from a passing one."""
    result = handoff("note", article, "--set", "-", "--as", "bob", input=BLOCKED + "db-19 done.\n")
    assert "the note says db-19 is done; the ledger says queued" in result.stdout, result.stdout
    clean = handoff("note", article, "--set", "-", "--as", "bob", input=BLOCKED + "db-19 queued.\n")
    assert "the reviewer found" not in clean.stdout, clean.stdout
