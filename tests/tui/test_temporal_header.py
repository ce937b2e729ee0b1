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


async def test_header_says_a_terminated_workflow_ended(ledger_path: Path, tmp_path: Path, monkeypatch) -> None:
    """A real dev server holds a workflow of this id, terminated; the keeper's beat is a
    minute old. The header asks the server and says the workflow ended, never `running`."""
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from temporal_kit import Server, temporal_binary
    from temporalio.client import Client

    from engine.temporal import client as temporal_client
    from engine.temporal.names import WORKFLOW

    # The header waits 2 s for the server; on a loaded machine the dev server's answer took
    # longer, and an unanswered server rightly leaves the state as it was. Here it must answer.
    monkeypatch.setattr(temporal_client, "ASK_TIMEOUT", 30.0)

    server = Server(tmp_path)
    try:
        wid = WID + "-ended"
        client = await Client.connect(server.address)
        await client.start_workflow(WORKFLOW, {}, id=wid, task_queue="nobody-polls-this")
        del client
        killed = subprocess.run([temporal_binary(), "workflow", "terminate", "--address", server.address,
                                 "--workflow-id", wid, "--reason", "history limit"], capture_output=True, text=True)
        assert killed.returncode == 0, killed.stderr
        job = {"ledger": str(ledger_path), "workflow_id": wid, "address": server.address, "namespace": "default",
               "task_queue": "nobody-polls-this", "actor": None, "poll": 30.0, "heartbeat_timeout": 20.0}
        assert core.take_lease(job)["code"] == 0
        beat = Path(str(ledger_path) + ".heartbeat")
        old = beat.stat().st_mtime - 60
        os.utime(beat, (old, old))  # the keeper stopped beating a minute ago
        app = make_app(str(ledger_path), clock=fixed_clock, watch=False, actor="alice")
        async with app.run_test(size=(320, 30)) as pilot:  # wide enough for the whole detail
            await settle(pilot)
            line = app.main.query_one(HeaderBar).lines(320)[1].plain
    finally:
        server.stop()
    assert f"✗ session dead · temporal workflow {wid}" in line, line
    assert f"temporal workflow {wid} ended: terminated at" in line and "(history limit)" in line, line
    assert "running" not in line, line
