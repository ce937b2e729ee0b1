"""`handoff report` (default: CSV to stdout, read in a terminal as often as in a spreadsheet)
spells control characters out, as `status`, `journal` and `diff` do: a checkpoint a probe printed
with cursor codes (`\\x1b[1A\\x1b[2K` erases the line above: an auditor's row) never reaches the
terminal raw (a review found it did)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.conftest import handoff


def test_the_csv_report_prints_no_raw_escape(tmp_path: Path) -> None:
    probe = "import sys; sys.stdout.write('\\x1b[1A\\x1b[2K\\x1b]0;title\\x07CP\\n')"
    data = {"task": "esc", "runbook": {"steps": [
        {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true"],
         "verify": [sys.executable, "-c", probe]},
        {"name": "link", "from": "checked", "to": "done", "run": ["true"]}]},
        "targets": {"db-1": {"state": "queued"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    assert handoff("run", ledger, "db-1").returncode == 0
    assert "\\x1b" in handoff("status", ledger, "--json").stdout or "\\u001b" in handoff("status", ledger, "--json").stdout
    assert handoff("approve", ledger, "db-1", "--yes", "--as", "alice").returncode == 0
    assert handoff("run", ledger, "db-1").returncode == 0
    report = handoff("report", ledger)
    assert "db-1" in report.stdout
    raw = sorted({f"U+{ord(c):04X}" for c in report.stdout if ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) < 0xA0})
    assert not raw, f"the CSV report hands these to the terminal: {raw}"
