"""The mutation table (bench/mutant_table.py) matches the source: every snippet is found
exactly once, every named test exists, ids are unique. Fast: nothing is mutated or run,
so a stale table fails here long before anyone runs bench/mutants.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _mutants():
    spec = importlib.util.spec_from_file_location("bench_mutants", ROOT / "bench" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_snippet_and_test_in_the_table_is_in_the_current_source() -> None:
    mutants = _mutants()
    assert mutants.problems(ROOT) == []
    assert len(mutants.MUTANTS) >= 20


def test_a_snippet_gone_from_the_source_is_reported_stale_with_what_to_do(tmp_path) -> None:
    """A copy of the tree where one snippet was edited away: that mutant, and only it, is stale; a moved file is found."""
    mutants = _mutants()
    for folder in ("engine", "tui", "tests", "bench", "ledgers"):
        subprocess.run(["cp", "-r", str(ROOT / folder), str(tmp_path / folder)], check=True)
    first = mutants.MUTANTS[0]
    path = tmp_path / first.path
    path.write_text(path.read_text().replace(first.find, first.find.replace("ledger.session", "ledger.lease")))
    moved = next(m for m in mutants.MUTANTS if m.path == "engine/ledger/guard.py")
    (tmp_path / "engine" / "moved").mkdir()
    (tmp_path / moved.path).rename(tmp_path / "engine" / "moved" / "guard.py")
    found = mutants.problems(tmp_path)
    assert [p for p in found if "stale" in p] == [
        f"{first.id}: stale: the snippet is no longer in {first.path} (or anywhere under engine, tui): update the table"]
    assert f"{moved.id}: moved: engine/ledger/guard.py -> engine/moved/guard.py (update bench/mutant_table.py)" in found
    check = subprocess.run([sys.executable, str(ROOT / "bench" / "mutants.py"), "--check"], capture_output=True, text=True,
                           cwd=str(ROOT), timeout=60)
    assert check.returncode == 0 and f"{len(mutants.MUTANTS)} mutants, 0 problem(s)" in check.stdout, check.stdout
