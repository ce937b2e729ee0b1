"""A ledger a Temporal workflow drives looks like any other on screen; the header names the
workflow and how many workers serve it (from the lease keeper's heartbeat)."""

from __future__ import annotations

from pathlib import Path

from engine.temporal import core
from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app
from tui.widgets.header import HeaderBar

WID = "handoff-0b7e2a52-5d0c-4c55-9b38-2f0d6c1e9a11"


async def test_header_shows_the_workflow_and_its_workers(ledger_path: Path) -> None:
    job = {"ledger": str(ledger_path), "workflow_id": WID, "address": "127.0.0.1:7233", "namespace": "default",
           "task_queue": "handoff", "actor": None, "poll": 30.0, "heartbeat_timeout": 20.0}
    assert core.take_lease(job)["code"] == 0
    keeper = core.Keeper(job)
    keeper.workers = 2
    assert keeper.once() is None  # a beat saying "on 2 workers"
    app = make_app(str(ledger_path), clock=fixed_clock, watch=False, actor="alice")
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        line = app.main.query_one(HeaderBar).lines(200)[1].plain
    assert f"● session running · temporal workflow {WID}" in line, line
    assert "on 2 workers" in line, line
