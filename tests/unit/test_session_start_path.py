"""A session started from the TUI (`LedgerHandle.start_session`) runs in the ledger's folder as
the person who pressed the key. It was started as `python -m engine.cli.main`, which puts that
folder first on sys.path: an `engine/` package an agent left beside the ledger ran instead of
the engine, as the person. It runs with `python -P` (Python 3.11+), so only the installed
engine is imported."""

from __future__ import annotations

import os
import time
from pathlib import Path

from session_kit import demo_copy

from engine import api


def test_a_package_beside_the_ledger_never_runs_as_the_session(tmp_path: Path) -> None:
    ledger = demo_copy(tmp_path)
    marker = tmp_path / "shadow-ran"
    fake = ledger.parent / "engine" / "cli"
    fake.mkdir(parents=True)
    for init in (ledger.parent / "engine" / "__init__.py", fake / "__init__.py"):
        init.write_text("")
    (fake / "main.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    handle = api.open_ledger(str(ledger), actor="alice")
    pid = handle.start_session(["--dry-run", "--max-steps", "1"])
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        assert time.monotonic() < deadline, "the dry run never ended"
        time.sleep(0.1)
    assert not marker.exists()
    log = Path(api.session_log_path(str(ledger))).read_text("utf-8")
    assert "dry run" in log.lower(), log
