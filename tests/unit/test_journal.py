"""The journal: append-only JSON lines, a torn last line skipped with a warning, and
secrets redacted before anything reaches the disk."""

from __future__ import annotations

import json
import os
import time

from engine.audit.journal import Journal, journal_path
from engine.audit.redact import MASK, Redactor
from tests.conftest import handoff


def test_append_and_read_back(tmp_path):
    """Records come back in order with time, kind, actor, revision, target and their byte offset."""
    journal = Journal(str(tmp_path / "l.yaml.journal.jsonl"))
    first = journal.append("note", "note set", actor="alice", rev=3)
    journal.append("approval", "db-1 approved", actor="bob", rev=4, target="db-1", step="cutover")
    records, offset = journal.read(0)
    assert [r["kind"] for r in records] == ["note", "approval"]
    assert records[1]["actor"] == "bob" and records[1]["rev"] == 4 and records[1]["target"] == "db-1"
    assert records[0]["seq"] == first["seq"] == 0 and records[1]["seq"] > 0
    assert offset == os.path.getsize(journal.path)
    assert journal.read(offset) == ([], offset)


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    """A crash mid-append leaves half a line: readers skip it with a warning and keep the good records."""
    journal = Journal(str(tmp_path / "l.yaml.journal.jsonl"))
    journal.append("log", "one", actor="s")
    journal.append("log", "two", actor="s")
    with open(journal.path, "ab") as fh:
        fh.write(b'{"ts":"2026-09-10T02:11:04Z","kind":"log","msg":"thr')
    old = time.time() - 60
    os.utime(journal.path, (old, old))
    records, _ = journal.read(0)
    assert [r["msg"] for r in records] == ["one", "two"]
    assert any("incomplete" in w for w in journal.warnings)


def test_damaged_middle_line_is_skipped_with_a_warning(tmp_path):
    """A complete line that is not JSON is skipped (named by its byte offset); later records still read."""
    journal = Journal(str(tmp_path / "l.yaml.journal.jsonl"))
    journal.append("log", "one", actor="s")
    with open(journal.path, "ab") as fh:
        fh.write(b"garbage\n")
    journal.append("log", "two", actor="s")
    records, _ = journal.read(0)
    assert [r["msg"] for r in records] == ["one", "two"]
    assert any("damaged" in w for w in journal.warnings)


def test_cli_journal_survives_a_torn_line(fleet):
    """`handoff journal` prints the good records and warns about the torn one on stderr (exit 0)."""
    assert handoff("pause", fleet, "--reason", "lunch").returncode == 0
    path = journal_path(str(fleet))
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"lo')
    old = time.time() - 60
    os.utime(path, (old, old))
    result = handoff("journal", fleet, "--json")
    assert result.returncode == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["kind"] for r in records] == ["pause"]
    assert "incomplete" in result.stderr


def test_default_redaction_of_common_secret_shapes():
    """PASSWORD=..., URLs with credentials, bearer and vendor tokens, AWS keys and private keys are masked."""
    r = Redactor()
    cases = {
        "PGPASSWORD=hunter2 psql": "PGPASSWORD=" + MASK + " psql",
        "export DB_PASSWORD='s3cret'": "export DB_PASSWORD='" + MASK + "'",
        'SECRET_KEY="s3cret"': 'SECRET_KEY="' + MASK + '"',
        "api_key: abcdef123": "api_key: " + MASK,
        "postgresql://admin:topsecret@db-18:5432/app": "postgresql://admin:" + MASK + "@db-18:5432/app",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload": "Authorization: Bearer " + MASK,
        "key sk-ant-api03-abcdefghijklmnopqrstuv": "key " + MASK,
        "ghp_abcdefghijklmnopqrstuvwxyz0123": MASK,
        "AKIAABCDEFGHIJKLMNOP": MASK,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----": MASK,
    }
    for text, expected in cases.items():
        out = r.text(text)
        assert out == expected, (text, out)


def test_redaction_leaves_ordinary_text_alone():
    """Lags, LSNs, ticket numbers and hosts without credentials are not masked."""
    r = Redactor()
    for text in ("replication lag 1.4s at 0/9A3F2C10", "PLAT-4412", "https://db-18.internal:5432/app", "user=postgres"):
        assert r.text(text) == text


def test_ledger_redact_patterns_apply_to_journal_records(fleet):
    """A ledger's `redact:` patterns mask matches in what the CLI journals (here a rejection reason)."""
    text = fleet.read_text().replace("task: small-fleet\n", "task: small-fleet\nredact:\n- 'corp-[0-9]{6}'\n")
    fleet.write_text(text)
    result = handoff("reject", fleet, "db-1", "--reason", "ticket corp-123456 says no; PASSWORD=abc123", "--as", "bob")
    assert result.returncode == 0, result.stderr
    raw = open(journal_path(str(fleet)), encoding="utf-8").read()
    assert "corp-123456" not in raw and "abc123" not in raw
    assert MASK in raw


def test_redaction_reaches_nested_values(tmp_path):
    """Secrets inside lists and nested fields (argv, output tails) are masked too."""
    journal = Journal(str(tmp_path / "j.jsonl"), redact=["internal-[a-z]+"])
    journal.append("step_end", "done", actor="s", argv=["psql", "postgresql://u:pw123@h/db"], output={"tail": ["internal-secret"]})
    raw = open(journal.path).read()
    assert "pw123" not in raw and "internal-secret" not in raw
