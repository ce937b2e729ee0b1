"""Invariants the session cannot argue with: it refuses to start on what it cannot enforce,
and a refused session changes nothing but one journal record."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from pathlib import Path
from types import SimpleNamespace

from session_kit import journal, load, resume, tool, tool_ledger

from engine.api import open_ledger
from engine.lease import leasing
from engine.ledger.guard import Decision
from engine.planners.autopilot import Action
from engine.session.steps import write_intent
from tests.conftest import ARTICLE

CHECK = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "ok")}]


def _folder_state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_a_typo_in_an_invariant_refuses_the_session_and_names_the_closest_sentence(tmp_path: Path) -> None:
    """`never touch more then 2 dbs concurrently` is not understood: exit 2, the closest form named, nothing changed."""
    ledger = tool_ledger(tmp_path, CHECK, {f"t{i}": {} for i in range(3)},
                         invariants=["never touch more then 2 dbs concurrently", "do the right thing"])
    before = _folder_state(ledger.parent)
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert 'invariant unenforced (not understood): "never touch more then 2 dbs concurrently"' in result.stderr
    assert 'write it as "never touch more than 2 dbs concurrently"' in result.stderr
    assert 'invariant unenforced (not understood): "do the right thing"' in result.stderr
    after = _folder_state(ledger.parent)
    assert after.pop("ledger.yaml.journal.jsonl") and after == before
    (record,) = journal(ledger)
    assert record["kind"] == "session_refused"


def test_allow_unenforced_runs_and_says_so_in_the_journal(tmp_path: Path) -> None:
    """With --allow-unenforced the session runs and journals that it does (the TUI reads the flag from its lease)."""
    ledger = tool_ledger(tmp_path, CHECK, {"t1": {}}, invariants=["do the right thing"])
    result = resume(ledger, "--allow-unenforced", world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert load(ledger)["targets"]["t1"]["state"] == "checked"
    assert any(r["kind"] == "warning" and r.get("allow_unenforced") is True for r in journal(ledger))
    assert "NOT enforced" in result.stdout


def test_the_articles_ledger_refused_changes_nothing(tmp_path: Path) -> None:
    """The article's own ledger (no runbook; a pause threshold with no `metrics` entry): exit 2; the file is byte-identical."""
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE)
    before = _folder_state(tmp_path)
    result = resume(path, world=tmp_path)
    assert result.returncode == 2
    assert "no runbook: viewable, sessions cannot act" in result.stderr
    after = _folder_state(tmp_path)
    assert after.pop("ledger.yaml.journal.jsonl") and after == before
    assert [r["kind"] for r in journal(path)] == ["session_refused"]


def test_inside_the_intent_transaction_every_guard_refusal_counts(tmp_path: Path) -> None:
    """Proposed while allowed, then the ledger is paused: the intent transaction refuses; nothing is in flight."""
    ledger = tool_ledger(tmp_path, CHECK, {"t1": {}})
    handle = open_ledger(str(ledger), actor="agent")
    leasing.acquire(handle.store, str(ledger), leasing.session_lease("s-1", user="agent", planner="autopilot"))
    session = SimpleNamespace(sid="s-1", host=socket.gethostname(), ledger_dir=str(ledger.parent), identity="agent:s-1",
                              store=handle.store, txn_lock=threading.Lock(), handle=handle)
    proposed = handle.store.read().step("check")
    handle.pause("the error rate jumped")
    result = write_intent(session, Action("t1", proposed), [])
    assert isinstance(result, Decision) and not result.allowed and not result.needs_approval
    assert "paused" in result.reason
    assert handle.store.read().targets["t1"].in_flight is None
