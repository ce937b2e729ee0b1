"""The report and `show --at` over the demo fleet's run, checked against the simulator's world.

The demo ledger (40 databases, sim.py as the world) is run for real: a session works
until it needs people, alice approves what waits, a second session runs it. Then every
irreversible run the world counted (`sim.py counts`: link and cutover runs per database)
is a report row exactly once, approved by alice before it started, with its step_end,
and no row is a run the world did not see; and `show --at` of the revision after each
command is the ledger file as it was then.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml
from session_kit import counts, demo_copy, handoff, resume


def test_report_rows_are_the_worlds_irreversible_runs_and_show_at_is_the_file(tmp_path: Path) -> None:
    world = tmp_path / "world"
    ledger = demo_copy(tmp_path)
    seen: dict[int, dict] = {}

    def keep() -> None:
        data = yaml.safe_load(ledger.read_text())
        seen[data["revision"]] = data

    first = resume(ledger, world=world, timeout=300)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr
    keep()
    waiting = [n for n, t in yaml.safe_load(ledger.read_text())["targets"].items() if t["state"] == "awaiting_approval"]
    assert waiting, "the first session gates an irreversible step"
    for name in waiting:
        approved = handoff("approve", str(ledger), name, "--as", "alice", world=world)
        assert approved.returncode == 0, approved.stdout + approved.stderr
        keep()
    second = resume(ledger, world=world, timeout=300)
    assert second.returncode in (0, 3), second.stdout[-2000:] + second.stderr
    keep()

    report = handoff("report", str(ledger), "--format", "json", world=world)
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)["rows"]
    ran = Counter()
    for db, c in counts(world).items():
        ran.update({(db, "link"): c.get("link_runs", 0), (db, "cutover"): c.get("cutover_runs", 0)})
    ran = +ran  # only what ran
    assert ran, "the approved steps ran in the world"
    assert Counter((r["target"], r["step"]) for r in rows) == ran
    journal = [json.loads(line) for line in Path(f"{ledger}.journal.jsonl").read_text().splitlines()]
    starts = [r for r in journal if r["kind"] == "step_start" and r["step"] in ("link", "cutover")]
    assert sorted(r["seq"] for r in rows) == sorted(r["seq"] for r in starts)  # each start once
    for row in rows:
        assert row["approved_by"] == "alice" and row["approved_before_start"] is True, row
        assert row["exit_code"] == 0 and row["flags"] == [], row
    for rev, data in seen.items():
        shown = handoff("show", str(ledger), "--at", str(rev), world=world)
        assert shown.returncode == 0, shown.stderr
        assert yaml.safe_load(shown.stdout) == data, rev
