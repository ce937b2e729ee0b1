"""Header and summary come from one reading: while a real writer changes the ledger as fast as it
can, every look at the screen finds the header's awaiting count equal to the summary's, and both
painted from the same reading (the same `seq`)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, wait_until
from tui.app import make_app
from tui.widgets.header import HeaderBar
from tui.widgets.summary import SummaryBar

N = 30

LEDGER = """\
task: many-approvals
environment: staging
targets:
{targets}
runbook:
  steps:
    - {{name: check, from: queued, to: checked, reversible: true, run: ["true", "{{target}}"]}}
    - {{name: cutover, from: checked, to: done, reversible: false, run: ["true", "{{target}}"]}}
"""


def fleet(path: Path) -> Path:
    rows = "\n".join(f'  db-{i:02d}: {{state: awaiting_approval, awaiting: cutover, awaiting_by: agent, '
                     f'awaiting_since: "2026-11-29T02:50:00Z"}}' for i in range(N))
    path.write_text(LEDGER.format(targets=rows), encoding="utf-8")
    return path


def header_awaiting(app) -> int:
    text = app.main.header_text()
    found = re.search(r"⚑ (\d+) awaiting", text)
    return int(found.group(1)) if found else 0


def summary_awaiting(app) -> int:
    text = str(app.main.query_one(SummaryBar).counts.content)
    found = re.search(r"(\d+) awaiting_approval", text)
    return int(found.group(1)) if found else 0


async def test_header_and_summary_never_disagree_under_a_writer(tmp_path: Path) -> None:
    """30 rejections written by another handle while the screen watches: no look finds the two counts apart."""
    path = fleet(tmp_path / "ledger.yaml")
    app = make_app(str(path), actor="alice", clock=fixed_clock, watch=True)
    writer = open_ledger(str(path), actor="bob")
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(N):
                writer.reject(f"db-{i:02d}", "not tonight")
                time.sleep(0.05)  # a burst faster than the watcher's debounce would be one change on screen
        finally:
            done.set()

    looks, seen_counts = 0, set()
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: app.main.ledger is not None and app.main.query_one(SummaryBar).seq > 0)
        assert header_awaiting(app) == summary_awaiting(app) == N
        thread = threading.Thread(target=write)
        thread.start()
        while not done.is_set() or summary_awaiting(app) != 0:
            await pilot.pause(0.01)
            header, summary = header_awaiting(app), summary_awaiting(app)
            assert header == summary, f"look {looks}: header says {header} awaiting, summary {summary}"
            assert app.main.query_one(HeaderBar).info.seq == app.main.query_one(SummaryBar).seq
            seen_counts.add(summary)
            looks += 1
            assert looks < 20_000, "the screen never reached the writer's last state"
        thread.join()
    # The looks saw the ledger move (not one frame before and one after the whole burst).
    assert len(seen_counts) >= 3 and 0 in seen_counts
