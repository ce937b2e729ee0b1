"""`handoff reject --expect-hash H` says no only to the request whose hash was shown.

`handoff approve --expect-hash H` approves only while the command and checkpoint still have
hash H (`status --json` shows it); `handoff reject` had no such flag, so a script (or a
person) that read the request and then rejected it blocked whatever the target awaited by
then. The same flag, the same behaviour: another hash is refused, exit 1, "changed since
you looked", and the ledger is byte-for-byte as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import handoff
from tests.unit.test_approval_binding import LEDGER


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER)
    return path


def shown_hash(ledger: Path) -> str:
    (item,) = json.loads(handoff("status", str(ledger), "--json").stdout)["awaiting"]
    return item["hash"]


def test_reject_with_the_hash_shown_blocks_the_target(ledger: Path) -> None:
    done = handoff("reject", str(ledger), "db-1", "--reason", "not tonight", "--expect-hash", shown_hash(ledger), "--as", "alice")
    assert done.returncode == 0, done.stderr
    target = yaml.safe_load(ledger.read_text())["targets"]["db-1"]
    assert target["state"] == "blocked" and target["reason"] == "rejected by alice: not tonight"


def test_reject_of_a_request_that_changed_is_refused_and_writes_nothing(ledger: Path) -> None:
    """The hash was read, then the checkpoint moved: exit 1, the refusal names what runs now, nothing written."""
    seen = shown_hash(ledger)
    ledger.write_text(ledger.read_text().replace('"0/AA"', '"0/BB"'))
    before = ledger.read_bytes()
    done = handoff("reject", str(ledger), "db-1", "--reason", "not tonight", "--expect-hash", seen, "--as", "alice")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "changed since you looked" in done.stderr and f"you saw hash {seen}" in done.stderr, done.stderr
    assert "nothing was rejected" in done.stderr
    assert ledger.read_bytes() == before


def test_reject_with_a_wrong_hash_is_refused(ledger: Path) -> None:
    before = ledger.read_bytes()
    done = handoff("reject", str(ledger), "db-1", "--reason", "not tonight", "--expect-hash", "0" * 16, "--as", "alice")
    assert done.returncode == 1 and "changed since you looked" in done.stderr, done.stderr
    assert ledger.read_bytes() == before


def test_reject_help_names_the_flag_as_approve_does() -> None:
    approve, reject = handoff("approve", "--help").stdout, handoff("reject", "--help").stdout
    assert "--expect-hash H" in approve and "--expect-hash H" in reject, reject
