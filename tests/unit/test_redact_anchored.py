"""A ledger's `redact:` pattern anchored to a whole value (`^hunter\\d+$`, `\\A...\\Z`) masks
that value wherever the engine stores or shows it: in the value itself (`status --json`, the
history's whole-ledger record, `handoff show`), and where a message quotes it (`db-1 blocked:
hunter22` in `needs_person`, status lines, the journal). `Redactor.document` scans the strings
of a big document joined with line breaks, so the ledger's own patterns are tried string by
string there (a review found `status --json` printing the secret)."""

from __future__ import annotations

from pathlib import Path

from engine.audit.redact import MASK, Redactor
from tests.conftest import handoff

LEDGER = """\
task: rotate-creds
redact: ['^hunter\\d+$']
targets:
  db-1: {state: blocked, reason: "hunter22"}
  db-2: {state: queued}
handoff_note: db-1 blocked.
"""


def test_document_masks_what_value_masks() -> None:
    for pattern in (r"^hunter\d+$", r"\Ahunter\d+", r"hunter\d+\Z"):
        r = Redactor([pattern])
        data = {"a": "x", "b": "hunter22", "c": ["blocked: hunter22"]}
        assert r.value(data) == {"a": "x", "b": MASK, "c": [f"blocked: {MASK}"]}, pattern
        assert r.document(data) == r.value(data), pattern


def test_an_anchored_pattern_still_holds_to_a_quoted_values_ends() -> None:
    r = Redactor([r"^hunter\d+$"])
    assert r.text("hunter22") == MASK
    assert r.text("db-1: blocked: hunter22.") == f"db-1: blocked: {MASK}."
    assert r.text("xhunter22 hunter22x") == "xhunter22 hunter22x"  # inside a longer word it is not the value
    assert Redactor([r"[^^]\$"]).text("a$") == MASK  # a `^` or `$` in a class or escaped is no anchor


def test_an_anchored_pattern_keeps_the_secret_out_of_status_the_journal_and_history(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    status = handoff("status", ledger, "--json")
    assert status.returncode == 0 and MASK in status.stdout
    assert "hunter22" not in status.stdout
    text = handoff("status", ledger)
    assert text.returncode == 0 and "hunter22" not in text.stdout
    assert handoff("note", ledger, "--set", "db-1 blocked, see its reason.", "--as", "bob").returncode == 0
    assert "hunter22" not in Path(str(ledger) + ".history.jsonl").read_text()
    assert "hunter22" not in Path(str(ledger) + ".journal.jsonl").read_text()
    assert "hunter22" not in handoff("show", ledger, "--at", "1").stdout
    assert "hunter22" in ledger.read_text()  # the ledger itself keeps what was written
