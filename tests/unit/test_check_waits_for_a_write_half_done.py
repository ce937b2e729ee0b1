"""A reader checking the journal against the ledger's last write waits for a writer that is between
the two: the writer holds the writers' lock from the ledger's swap until its journal records are in,
so `handoff check` and `handoff journal --verify` take the lock shared and read both once it is free.
A journal cut short with nobody writing is called a break at once (tests/unit/test_journal_tail_cut.py),
not after a grace; a live write is never called one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_env, handoff, wait_paused


@pytest.mark.parametrize("reader", [("check",), ("journal", "--verify")])
def test_a_write_paused_between_the_ledger_and_its_journal_is_not_called_a_cut(article: Path, tmp_path: Path, reader) -> None:
    assert handoff("note", article, "--set", "first", "--as", "bob").returncode == 0
    marker = tmp_path / "paused"
    writer = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "note", str(article), "--set", "second", "--as", "bob"],
                              env=cli_env(HANDOFF_FAILPOINTS="after-ledger-swap", HANDOFF_FAILPOINT_PAUSE=str(marker)),
                              cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_paused(marker)
        assert "second" in article.read_text()  # the ledger is written; its journal records are not yet
        check = subprocess.Popen([sys.executable, "-m", "engine.cli.main", reader[0], str(article), *reader[1:]],
                                 env=cli_env(), cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the reader has started and reached the journal while the write is half done
        assert check.poll() is None, f"{reader[0]} did not wait for the writer:\n{check.communicate()}"
    finally:
        if marker.exists():
            os.unlink(marker)
        _, writer_err = writer.communicate(timeout=30)
    out, err = check.communicate(timeout=30)
    assert writer.returncode == 0, writer_err
    assert check.returncode == 0, f"{reader[0]} called a live write a cut journal:\n{out}{err}"
