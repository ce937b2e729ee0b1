"""The auditor's report carries each run's verify evidence and lists every record known to be lost.

A real run (a session gating an irreversible step whose verify reads back the checkpoint it wrote, a
person approving, a session running it): each row's `verify_evidence` is the state and
checkpoint of the transition the session journaled after the run. A `journal_gap` (a
change whose own record could not be written, noted by the journal's own writer and
written at its next append) is listed in the proof, the proof says a record is missing,
and the report exits 1 in every form, the files unchanged; ledger text in it stays data.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import handoff

LEDGER = """\
task: evidence
owner_shift: test-oncall
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
  - {name: link, from: checked, to: done, run: [cp, "{ledger_dir}/lsn.txt", "{ledger_dir}/{target}.lsn"], verify: [cat, "{ledger_dir}/{target}.lsn"]}
targets:
  db-1: {state: queued}
"""


def _ok(*args) -> str:
    result = handoff(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    ledger = tmp_path_factory.mktemp("evidence") / "ledger.yaml"
    ledger.write_text(LEDGER)
    (ledger.parent / "lsn.txt").write_text("0/9A3F2C10\n")  # what link "makes", and its verify reads back
    _ok("resume", ledger)
    _ok("approve", ledger, "db-1", "--as", "alice")
    _ok("resume", ledger)
    return ledger


def _journal(ledger: Path) -> list[dict]:
    return [json.loads(line) for line in Path(f"{ledger}.journal.jsonl").read_text().splitlines()]


def _build(records: list[dict]):
    from engine.audit.report import build
    from engine.audit.verify import Verdict

    return build(records, Verdict(), irreversible={"link"})


def test_each_row_carries_the_outcome_its_verify_recorded(run: Path) -> None:
    records = _journal(run)
    [row] = json.loads(_ok("report", run, "--format", "json"))["rows"]
    [after] = [r for r in records if r["kind"] == "transition" and r.get("to") == "done"]
    assert after["checkpoint"] == "0/9A3F2C10"
    assert row["verify_evidence"] == f"state done, checkpoint 0/9A3F2C10 (its verify) (seq {after['seq']})"
    assert row["flags"] == []
    assert "verify_evidence" in _ok("report", run).splitlines()[0].split(",")


def test_a_discrepancy_or_no_outcome_is_said(run: Path) -> None:
    records = _journal(run)
    [at] = [i for i, r in enumerate(records) if r["kind"] == "transition" and r.get("to") == "done"]
    lied = [dict(r) for r in records]
    lied[at] = {**lied[at], "kind": "discrepancy", "msg": "db-1: <b>verify said 0/DEAD</b>"}
    [row] = _build(lied).rows
    assert row.verify_evidence == f"DISCREPANCY (seq {lied[at]['seq']}): db-1: <b>verify said 0/DEAD</b>"
    from engine.audit import report_render as audit_render

    page = audit_render.to_html(_build(lied), "t")
    assert "&lt;b&gt;verify said 0/DEAD&lt;/b&gt;" in page and "<b>verify" not in page
    [row] = _build(records[:at] + records[at + 1:]).rows
    assert row.verify_evidence == "" and "no outcome recorded after the run" in row.flags


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_a_lost_record_is_listed_and_the_report_exits_1(run: Path, tmp_path: Path) -> None:
    from engine.audit.journal import Journal

    ledger = tmp_path / "ledger.yaml"
    for suffix in ("", ".journal.jsonl", ".last-write.json", ".history.jsonl"):
        if Path(f"{run}{suffix}").exists():
            Path(f"{ledger}{suffix}").write_bytes(Path(f"{run}{suffix}").read_bytes())
    # What the journal's writer notes when a change's record cannot be written (disk full),
    # then writes as a `journal_gap` record at its next append.
    Journal(f"{ledger}.journal.jsonl")._note_gap({"rev": 7, "kind": "transition", "target": "db-1",
                                                   "msg": "db-1 done", "error": "No space left on device"})
    _ok("note", ledger, "--set", "after the disk filled", "--as", "alice")
    [gap] = [r for r in _journal(ledger) if r["kind"] == "journal_gap"]
    before = _files(tmp_path)
    out = handoff("report", ledger)
    assert out.returncode == 1
    assert f"# gap at seq {gap['seq']}: revision 7's transition record about db-1 was lost (No space left on device)" \
        in out.stdout and "# no record missing: NO" in out.stdout
    as_json = handoff("report", ledger, "--format", "json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["proof"]["gaps"] == [
        {"seq": gap["seq"], "rev": 7, "lost_kind": "transition", "target": "db-1", "error": "No space left on device"}]
    page = handoff("report", ledger, "--format", "html")
    assert page.returncode == 1 and '<li class="bad">no record missing: NO</li>' in page.stdout
    assert _files(tmp_path) == before
    assert "# no record missing: yes" in _ok("report", run)
