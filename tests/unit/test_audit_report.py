"""`handoff report`, `show --at` and `diff` over a real session run, checked against its journal.

One small ledger is run for real (two sessions, two people approving with
`handoff approve`, steps that are `echo`), then read back: every irreversible start
in the journal is a report row exactly once, approved by the approval record it names
before it started; the CSV, JSON and HTML forms say the same; an edited journal record
is a break in the completeness proof; bad input exits 2 with the files unchanged.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import handoff

LEDGER = """\
task: audit
owner_shift: test-oncall
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
  - {name: link, from: checked, to: done, run: ["echo", "{target}", "<script>alert(1)</script>"]}
targets:
  db-1: {state: queued}
  db-2: {state: queued}
"""


def _ok(*args) -> str:
    result = handoff(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _cli(*args) -> subprocess.CompletedProcess:
    """`handoff ARGS` through the real entry point (engine.cli.main.main), in this process:
    the read-only commands need no process of their own, and the suite saves a second a call."""
    from engine.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def _read(*args) -> str:
    result = _cli(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """The ledger after: a session gating link on both, alice and bob approving, a session running both."""
    ledger = tmp_path_factory.mktemp("audit") / "ledger.yaml"
    ledger.write_text(LEDGER)
    _ok("resume", ledger)
    _ok("approve", ledger, "db-1", "--as", "alice")
    _ok("approve", ledger, "db-2", "--as", "bob")
    _ok("resume", ledger)
    return ledger


def _journal(ledger: Path) -> list[dict]:
    return [json.loads(line) for line in Path(f"{ledger}.journal.jsonl").read_text().splitlines()]


def _files(ledger: Path) -> dict[str, str]:
    return {str(p.relative_to(ledger.parent)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ledger.parent.rglob("*")) if p.is_file()}


def test_every_irreversible_start_is_one_row_approved_before_it_started(run: Path) -> None:
    records = _journal(run)
    starts = [r for r in records if r["kind"] == "step_start" and r["step"] == "link"]
    assert len(starts) == 2  # the run did what the test needs
    report = json.loads(_read("report", run, "--format", "json"))
    rows = report["rows"]
    assert sorted(r["seq"] for r in rows) == sorted(s["seq"] for s in starts)  # each once, and no reversible `check`
    for row in rows:
        start = next(s for s in starts if s["seq"] == row["seq"])
        [approval] = [r for r in records if r["kind"] == "approval" and r["target"] == row["target"]]
        [gate] = [r for r in records if r["kind"] == "gate" and r["target"] == row["target"] and r["step"] == "link"]
        [end] = [r for r in records if r["kind"] == "step_end" and r.get("token") == start["token"]]
        assert row["argv"] == start["argv"] == ["echo", row["target"], "<script>alert(1)</script>"]
        assert row["hash"] == approval["hash"] == start["approval_hash"]
        assert row["approved_by"] == approval["actor"] == {"db-1": "alice", "db-2": "bob"}[row["target"]]
        assert row["requested_by"] == gate["actor"] != row["approved_by"]
        assert approval["seq"] < start["seq"] and row["approved_at"] == approval["at"] <= row["started_at"] == start["ts"]
        assert row["approved_before_start"] is True and row["flags"] == []
        assert (row["exit_code"], row["duration"]) == (0, end["duration"])
        assert row["verified"].startswith("not verified")  # --as names nobody the engine checked
    proof = report["proof"]
    assert proof == {"first_seq": records[0]["seq"], "last_seq": records[-1]["seq"], "records": len(records),
                     "chain_verified": True, "breaks": [], "gaps": []}


def test_csv_and_html_say_what_json_says(run: Path, tmp_path: Path) -> None:
    rows = json.loads(_read("report", run, "--format", "json"))["rows"]
    text = _read("report", run)
    table = list(csv.DictReader(io.StringIO("".join(l for l in text.splitlines(True) if not l.startswith("#")))))
    assert [(r["seq"], r["target"], r["approved_by"], json.loads(r["argv"])) for r in table] == \
           [(str(r["seq"]), r["target"], r["approved_by"], r["argv"]) for r in rows]
    assert "# chain verified: yes" in text
    out = tmp_path / "report.html"
    assert "2 irreversible step runs; chain verified: yes" in _read("report", run, "--format", "html", "-o", out)
    page = out.read_text()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # ledger text is escaped
    assert not any(word in page for word in ("http:", "https:", "src=", "<link", "@import", "url("))  # self-contained
    assert all(f"<td>{r['approved_by']}</td>" in page for r in rows)


def test_a_period_holds_only_its_records(run: Path) -> None:
    records = _journal(run)
    last_start = max(r["ts"] for r in records if r["kind"] == "step_start")
    after = json.loads(_read("report", run, "--format", "json", "--from", "2999-01-01T00:00Z"))
    assert after["rows"] == [] and after["proof"]["records"] == 0
    before = json.loads(_read("report", run, "--format", "json", "--to", "2000-01-01T00:00Z"))
    assert before["rows"] == []
    upto = json.loads(_read("report", run, "--format", "json", "--to", last_start))
    inside = [r["seq"] for r in records if r["ts"] <= last_start]
    assert len(upto["rows"]) == 2
    assert (upto["proof"]["first_seq"], upto["proof"]["last_seq"], upto["proof"]["records"]) == \
           (inside[0], inside[-1], len(inside))


def test_an_edited_record_is_a_break_in_the_proof(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run.parent, copy)
    path = copy / "ledger.yaml.journal.jsonl"
    lines = path.read_text().splitlines(True)
    [at] = [i for i, l in enumerate(lines) if '"kind":"approval"' in l and '"actor":"bob"' in l]
    lines[at] = lines[at].replace('"actor":"bob"', '"actor":"bo2"')  # same length: only the hash can tell
    path.write_text("".join(lines))
    result = handoff("report", copy / "ledger.yaml", "--format", "json")
    assert result.returncode == 1, result.stderr
    proof = json.loads(result.stdout)["proof"]
    assert proof["chain_verified"] is False
    assert [b["line"] for b in proof["breaks"]] == [at + 1]
    assert "# chain verified: NO" in _cli("report", copy / "ledger.yaml").stdout


def test_show_at_the_head_is_the_ledger_and_diff_names_the_records(run: Path) -> None:
    import yaml

    records = _journal(run)
    head = max(r["rev"] for r in records if "rev" in r)
    then = json.loads(_read("show", run, "--at", str(head), "--json"))["targets"]
    now = yaml.safe_load(run.read_text())["targets"]
    assert {n: t["state"] for n, t in then.items()} == {n: t["state"] for n, t in now.items()} == \
           {"db-1": "done", "db-2": "done"}
    gated = max(r["rev"] for r in records if r["kind"] == "transition" and r.get("to") == "awaiting_approval")
    at_gate = json.loads(_read("show", run, "--at", str(gated), "--json"))["targets"]
    assert at_gate["db-2"]["state"] == "awaiting_approval" and at_gate["db-2"]["awaiting"] == "link"
    [approval] = [r for r in records if r["kind"] == "approval" and r["target"] == "db-1"]
    approved = json.loads(_read("show", run, "--at", str(approval["rev"]), "--json"))["targets"]["db-1"]
    assert (approved["state"], approved["awaiting"], approved["in_flight"]) == ("checked", None, None)
    assert approved["approvals"] == [f"link by alice at {approval['at']}"]
    when = approval["ts"]  # a time means the last revision written by then
    by_then = max(r["rev"] for r in records if "rev" in r and r["ts"] <= when)
    assert json.loads(_read("show", run, "--at", when, "--json"))["revision"] == by_then
    out = _read("diff", run, str(gated))
    assert "db-1.state: awaiting_approval -> done" in out
    for r in records:
        if r["kind"] == "step_start" and r["step"] == "link":
            assert f"seq {r['seq']} rev {r['rev']} step_start by {r['actor']}" in out


@pytest.mark.parametrize("args, says", [
    (("report", "{dir}/nope.yaml"), "no such ledger file"),
    (("report", "{ledger}", "--from", "yesterday"), "--from 'yesterday' is not a time"),
    (("report", "{ledger}", "--from", "2026-12-02T00:00Z", "--to", "2026-12-01T00:00Z"), "is after --to"),
    (("report", "{ledger}", "-o", "{ledger}"), "already exists; give a new file name"),
    (("show", "{ledger}", "--at", "9999"), "revision 9999 is out of range: the journal records revisions 0 to"),
    (("show", "{ledger}", "--at", "soon"), "'soon' is neither a revision"),
    (("diff", "{ledger}", "0", "-3"), "revision -3 is out of range"),
])
def test_bad_input_exits_2_and_changes_nothing(run: Path, args, says) -> None:
    before = _files(run)
    given = [a.format(dir=run.parent, ledger=run) for a in args]
    result = handoff(*given) if args[1] == "{dir}/nope.yaml" else _cli(*given)  # one through a real process
    assert result.returncode == 2 and says in result.stderr, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert _files(run) == before


def _pixels(png: bytes) -> list[tuple[int, ...]]:
    """The RGB(A) pixels of an 8-bit PNG (what Chromium writes), unfiltered by hand: no imaging library here."""
    import struct
    import zlib

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, width = 8, b"", 0
    while pos < len(png):
        size, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            width, _, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            n = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += body
        pos += 12 + size
    raw, stride, prev, out = zlib.decompress(data), width * n, bytearray(width * n), []
    for y in range(len(raw) // (stride + 1)):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - n] if i >= n else 0
            b, c = prev[i], prev[i - n] if i >= n else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += [tuple(line[i:i + 3]) for i in range(0, stride, n)]
        prev = line
    return out


def _shot(page: Path, tmp_path: Path) -> list[tuple[int, ...]]:
    png = tmp_path / f"{page.stem}.png"
    # 960 px tall: the table's header row starts 269-309 px down (the run's own text above it varies), where
    # a 320 px window cut it off in one CI-like run.
    subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=640,960", f"--screenshot={png}", page.as_uri()],
                   capture_output=True, timeout=90, check=True, cwd=tmp_path)
    return _pixels(png.read_bytes())


def test_the_html_report_renders_in_headless_chromium(run: Path, tmp_path: Path) -> None:
    """Chromium (a real browser, no network) shows the page: text and the table's header colour, where a blank page has neither."""
    page = tmp_path / "report.html"
    _read("report", run, "--format", "html", "-o", page)
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    shown, empty = _shot(page, tmp_path), _shot(blank, tmp_path)
    dark = sum(1 for p in shown if sum(p) < 200)
    assert dark > len(shown) // 200, dark  # text: more than 0.5% of the window is ink
    assert (221, 221, 238) in set(shown)  # the table's header row (th background #dde) was drawn
    assert not any(sum(p) < 200 for p in empty) and (221, 221, 238) not in set(empty)


def _rows_of(records: list[dict]) -> dict[str, dict]:
    """build() over these records (the real run's, altered in memory), by target."""
    from dataclasses import asdict

    from engine.audit.report import build
    from engine.audit.verify import Verdict

    report = build(records, Verdict(), irreversible={"link"})
    return {r.target: asdict(r) for r in report.rows}


def test_a_start_without_a_prior_approval_is_flagged_never_dropped(run: Path) -> None:
    """What a forged or reordered journal would show: each departure is a flagged row."""
    records = _journal(run)
    starts = {r["target"]: r for r in records if r["kind"] == "step_start" and r["step"] == "link"}
    starts["db-1"].pop("approval_hash")  # an irreversible start naming no approval
    starts["db-2"]["approval_at"] = "2999-01-01T00:00:00Z"  # names an approval the journal does not hold
    rows = _rows_of(records)
    assert set(rows) == {"db-1", "db-2"}
    assert rows["db-1"]["flags"][0] == "NO APPROVAL named by the start" and not rows["db-1"]["approved_before_start"]
    assert "the approval it names has no journal record before it" in rows["db-2"]["flags"]
    records = _journal(run)
    [approval] = [r for r in records if r["kind"] == "approval" and r["target"] == "db-1"]
    records.remove(approval)
    records.append(approval)  # the approval now comes after the start in the journal
    assert "the approval it names has no journal record before it" in _rows_of(records)["db-1"]["flags"]
    records = _journal(run)
    [approval] = [r for r in records if r["kind"] == "approval" and r["target"] == "db-2"]
    [start] = [r for r in records if r["kind"] == "step_start" and r["target"] == "db-2" and r["step"] == "link"]
    approval["at"] = start["approval_at"] = "2999-01-01T00:00:00Z"  # approved (by its clock) after it started
    [gate] = [r for r in records if r["kind"] == "gate" and r["target"] == "db-2" and r["step"] == "link"]
    gate["actor"] = approval["actor"]  # and asked for by the same person
    flags = _rows_of(records)["db-2"]["flags"]
    assert "approved_at is not before started_at" in flags and "the requester approved it" in flags


@pytest.mark.parametrize("command", [("report",), ("show", "--at", "0"), ("diff", "0")])
def test_a_ledger_that_does_not_parse_is_named_with_its_line_and_left_alone(tmp_path: Path, command) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: x\ntargets: [\n")
    result = _cli(command[0], ledger, *command[1:])
    assert result.returncode == 2 and f"{ledger}:3:1:" in result.stderr and "fix the YAML" in result.stderr
    assert ledger.read_text() == "task: x\ntargets: [\n" and [p.name for p in tmp_path.iterdir()] == ["ledger.yaml"]
