"""Cases an independent review found: each once wrote a ledger wrong or ran a step it should not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.codec import strict
from engine.codec.canonical import emit_document
from engine.codec.document import parse_document
from engine.errors import LedgerInvalid, Refused
from engine.store.file import FileStore
from tests.conftest import ARTICLE


def handoff(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], input=stdin, capture_output=True, timeout=60)


@pytest.mark.parametrize("note", [
    "\n    indented first line\nsecond line",
    "    one indented line\nand another\n",
    "\n\nstarts with blank lines\n",
])
def test_notes_starting_with_indentation_or_blank_lines_read_back_exactly(tmp_path, note):
    """A note whose first line is blank or indented is written so that it reads back byte for byte."""
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE, encoding="utf-8")
    FileStore(str(path)).transact(lambda ledger: setattr(ledger, "handoff_note", note))
    text = path.read_text(encoding="utf-8")
    assert strict.load(text, str(path))["handoff_note"] == note  # the file itself, not the sidecar
    assert parse_document(text, str(path)).data["handoff_note"] == note


def test_bytes_that_are_not_utf8_are_refused_and_nothing_is_written(tmp_path):
    """A command-line argument or stdin that is not UTF-8 is refused with exit 2; the file is untouched."""
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE, encoding="utf-8")
    before = path.read_bytes()
    result = handoff("note", str(path), "--set", b"bad \xff byte".decode("utf-8", "surrogateescape"))
    assert result.returncode == 2 and b"not valid UTF-8" in result.stderr
    result = handoff("note", str(path), "--set", "-", stdin=b"x\xffy")
    assert result.returncode == 2 and b"not UTF-8" in result.stderr
    assert path.read_bytes() == before


def test_the_store_refuses_text_yaml_cannot_hold(tmp_path):
    """Through the API too: a lone surrogate in a target's reason is refused, nothing written."""
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(Refused, match="not UTF-8"):
        FileStore(str(path)).transact(lambda ledger: setattr(ledger.targets["db-19"], "reason", "x\udcffy"))
    assert path.read_bytes() == before


def test_fast_reader_leaves_surrogate_escapes_to_the_strict_loader(tmp_path):
    """A hand-written surrogate escape is an error for the strict loader, so the fast reader must not accept it."""
    text = ARTICLE.replace('db-19: {state: queued}', 'db-19: {state: queued, reason: "\\ud83d\\ude00"}')
    with pytest.raises(LedgerInvalid, match="x.yaml:"):
        strict.load(text, "x.yaml")
    with pytest.raises(LedgerInvalid, match="x.yaml:"):
        parse_document(text, "x.yaml")


def test_a_value_that_would_read_back_differently_is_refused(tmp_path):
    """An unknown key holding infinity would come back as the string "inf": refused, nothing written."""
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(Refused, match="read back differently"):
        FileStore(str(path)).transact(lambda ledger: setattr(ledger, "error_budget", float("inf")))
    assert path.read_bytes() == before
    data = parse_document(ARTICLE, "x.yaml").data
    text, _ = emit_document(data, "")
    assert parse_document(text, "y.yaml").data == data


def test_a_step_changed_in_the_runbook_since_it_was_proposed_is_decided_again(tmp_path):
    """The intent is decided on the runbook as it is now: a check made irreversible by hand does not run unapproved."""
    import shutil
    import socket
    import threading
    import time
    from types import SimpleNamespace

    from engine.api import open_ledger
    from engine.lease import leasing
    from engine.ledger.guard import Decision
    from engine.planners.autopilot import Action
    from engine.session.steps import write_intent
    from tests.conftest import ROOT

    folder = tmp_path / "fleet"
    shutil.copytree(ROOT / "ledgers" / "demo", folder, ignore=shutil.ignore_patterns("world", "*.jsonl", "*.lock", "*.json"))
    path = str(folder / "ledger.yaml")
    handle = open_ledger(path, actor="agent")
    leasing.acquire(handle.store, path, leasing.session_lease("s-1", user="agent", planner="autopilot"))
    session = SimpleNamespace(sid="s-1", host=socket.gethostname(), ledger_dir=str(folder), identity="agent:s-1",
                              store=handle.store, txn_lock=threading.Lock(), handle=handle)
    proposed = handle.store.read().step("check")
    assert proposed.reversible
    handle.store.transact(lambda ledger: setattr(ledger.step("check"), "reversible", False))
    result = write_intent(session, Action("db-19", proposed), [])
    assert isinstance(result, Decision) and not result.allowed and "changed since it was proposed" in result.reason
    assert handle.store.read().targets["db-19"].in_flight is None
