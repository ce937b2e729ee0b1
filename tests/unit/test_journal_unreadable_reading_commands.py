"""Reading commands on a ledger whose journal (or history journal) is a folder, or is not
readable by this user (another user's 0600 file in a shared ops folder): one line naming
the file and what to do, a documented exit code, never a Python traceback."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import handoff


READERS = [("check",), ("journal",), ("journal", "--verify"), ("report",), ("show", "--at", "1"), ("diff", "1", "2")]


def _primed(fleet):
    assert handoff("approve", fleet, "db-1", "--yes", "--as", "bob").returncode == 0
    assert handoff("pause", fleet, "--reason", "x").returncode == 0


HISTORY_READERS = [("check",), ("journal", "--verify"), ("show", "--at", "1"), ("diff", "1", "2")]


@pytest.mark.parametrize("suffix,args", [(".journal.jsonl", a) for a in READERS] + [(".history.jsonl", a) for a in HISTORY_READERS],
                         ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_a_folder_where_a_journal_belongs_is_one_line(fleet, suffix, args):
    _primed(fleet)
    side = str(fleet) + suffix
    os.remove(side)
    os.mkdir(side)
    before = fleet.read_bytes()
    result = handoff(args[0], fleet, *args[1:])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (1, 2) and side in result.stderr and "move it away" in result.stderr, result.stderr
    assert fleet.read_bytes() == before


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a))
def test_a_journal_another_user_keeps_private_is_one_line(fleet, args):
    """The journal is another user's 0600 file: read by a process that may not read it (root with every
    capability dropped, so it obeys file modes: the checkout stays readable from any folder)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, cli_env

    assert os.geteuid() == 0 and shutil.which("setpriv"), "this test drops root's capabilities: it needs root and setpriv (README)"
    _primed(fleet)
    journal = str(fleet) + ".journal.jsonl"
    os.chown(journal, 65534, 65534)
    os.chmod(journal, 0o600)
    result = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-m", "engine.cli.main",
                             args[0], str(fleet), *args[1:]], capture_output=True, text=True, cwd=str(ROOT), env=cli_env(),
                            timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (1, 2) and journal in result.stderr, result.stderr
    assert "cannot be read by" in result.stderr and "chmod g+r" in result.stderr, result.stderr
