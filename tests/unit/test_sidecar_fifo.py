"""A FIFO planted where a sidecar belongs (anyone who may write the ops folder can): every
command must refuse at once naming the file, as it does for the ledger path itself and
for `.lock`, not block forever in open() (status on the 2 AM bastion hangs; so does a
session)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import handoff

SIDECARS = [".journal.jsonl", ".journal.jsonl.index", ".last-write.json", ".last-write.targets.json",
            ".last-write.names.json", ".last-write.targets.jsonl", ".heartbeat"]


@pytest.mark.parametrize("args", [("status",), ("pause", "--reason", "x")], ids=["status", "pause"])
@pytest.mark.parametrize("suffix", SIDECARS)
def test_a_fifo_sidecar_is_refused_at_once(fleet, suffix, args):
    assert handoff("approve", fleet, "db-1", "--yes", "--as", "bob").returncode == 0
    side = str(fleet) + suffix
    if os.path.lexists(side):
        os.remove(side)
    os.mkfifo(side)
    before = fleet.read_bytes()
    try:
        result = handoff(args[0], fleet, *args[1:], timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`handoff {args[0]}` hung on the FIFO at {side}")
    assert "Traceback" not in result.stderr, result.stderr
    if result.returncode != 0:
        assert side in result.stderr, result.stderr
        assert fleet.read_bytes() == before
