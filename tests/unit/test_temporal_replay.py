"""Deploys mid-run: this version's workflow code replays recorded histories without
non-determinism (temporalio's Replayer, no server), so a change that would break running
workflows fails here before it ships.

tests/fixtures/temporal/ (see its README):
- `before-bounded-history.json`: a run of the workflow as it was before continue-as-new
  (a 1 s poll, two approvals, the handoff), recorded by a worker of that version;
- `waiting-for-approvals.json`, `completed-after-approvals.json`: runs from before the
  `local-decide` patch (their decisions are `decide` activities), recorded by
  tests/integration/test_temporal_days.py with HANDOFF_RECORD_TEMPORAL=1: a wait, and the
  last run of a continue-as-new chain through its approvals, steps and handoff;
- `waiting-local-decide.json`, `completed-local-decide.json`: the same two of this version,
  whose decisions are local activities (markers in the history).

The old run takes the old loop because it carries no `bounded-history` marker
(`workflow.patched`): replayed with a history limit far below its length, it must still
replay, where an unguarded continue-as-new would be a different command at that point.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from engine.temporal import workflow as wf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "temporal"
RECORDED = sorted(FIXTURES.glob("*.json"))


def _history(path: Path) -> WorkflowHistory:
    text = path.read_text()
    return WorkflowHistory.from_json(f"recorded-{path.stem}", text)


def _patches(path: Path) -> list[str]:
    """The patch ids a recorded run carries (its `core_patch` markers)."""
    found = []
    for event in json.loads(path.read_text())["events"]:
        marker = event.get("markerRecordedEventAttributes")
        if marker and marker.get("markerName") == "core_patch":
            for payload in marker["details"]["patch-data"]["payloads"]:
                found.append(json.loads(base64.b64decode(payload["data"]))["id"])
    return found


def test_the_recordings_are_there() -> None:
    assert {p.name for p in RECORDED} >= {"before-bounded-history.json", "waiting-for-approvals.json",
                                          "completed-after-approvals.json", "waiting-local-decide.json",
                                          "completed-local-decide.json"}, RECORDED
    assert _patches(FIXTURES / "before-bounded-history.json") == []
    assert _patches(FIXTURES / "waiting-for-approvals.json") == [wf.BOUNDED]  # its decisions are activities
    assert _patches(FIXTURES / "waiting-local-decide.json") == [wf.BOUNDED, wf.LOCAL_DECIDE]


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_a_recorded_history_replays(path: Path) -> None:
    """The sandboxed runner, as a worker runs it: any non-determinism raises."""
    asyncio.run(Replayer(workflows=[wf.LedgerWorkflow]).replay_workflow(_history(path)))


def test_an_old_run_keeps_its_old_loop(monkeypatch) -> None:
    """A history limit of 20 events: this version's loop would continue as new where the
    old run scheduled a decision. The patch keeps the old run on its old loop."""
    monkeypatch.setattr(wf, "HISTORY_MAX", 20)  # the old run's job has no history_max: this is its limit
    replayer = Replayer(workflows=[wf.LedgerWorkflow], workflow_runner=UnsandboxedWorkflowRunner())
    asyncio.run(replayer.replay_workflow(_history(FIXTURES / "before-bounded-history.json")))
