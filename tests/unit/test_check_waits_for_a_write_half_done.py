"""A reader checking the journal against the ledger's last write gives a writer that is between the
two a moment (engine.checks.chain.UNJOURNALED_GRACE): `handoff check` and `handoff journal --verify`
never call a live write a cut journal, whether the writer is still inside its transaction (the
ledger swapped, the writers' lock held) or past it (the lock let go, its journal records not yet
appended: engine.api's writes journal after the transaction, so the lock alone does not cover the
window; a first design of this stop waited on the lock instead of the grace and called that window a
cut). A journal cut short whose last writer has exited is called a break at once, with no grace
(tests/unit/test_journal_tail_cut.py): the lock file names that writer, and its records will never come."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_env, handoff, wait_paused


@pytest.mark.parametrize("point", ["after-ledger-swap", "before-journal-records"])
@pytest.mark.parametrize("reader", [("check",), ("journal", "--verify")])
def test_a_write_paused_between_the_ledger_and_its_journal_is_not_called_a_cut(article: Path, tmp_path: Path, reader, point) -> None:
    assert handoff("note", article, "--set", "first", "--as", "bob").returncode == 0
    marker = tmp_path / "paused"
    writer = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "note", str(article), "--set", "second", "--as", "bob"],
                              env=cli_env(HANDOFF_FAILPOINTS=point, HANDOFF_FAILPOINT_PAUSE=str(marker)),
                              cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_paused(marker)
        assert "second" in article.read_text()  # the ledger is written; its journal records are not yet
        check = subprocess.Popen([sys.executable, "-m", "engine.cli.main", reader[0], str(article), *reader[1:]],
                                 env=cli_env(), cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the reader has started and reached the journal while the write is half done
    finally:
        if marker.exists():
            os.unlink(marker)
        _, writer_err = writer.communicate(timeout=30)
    out, err = check.communicate(timeout=30)
    assert writer.returncode == 0, writer_err
    assert check.returncode == 0, f"{reader[0]} called a live write a cut journal:\n{out}{err}"
