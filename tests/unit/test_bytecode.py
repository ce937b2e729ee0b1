"""engine.bytecode: under PYTHONDONTWRITEBYTECODE=1 the engine's modules are still cached
as bytecode (a real interpreter on a copy of the package), a changed source is never run
from an old .pyc, other packages keep the interpreter's setting, and
HANDOFF_WRITE_BYTECODE=0 turns it off."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def _package(tmp_path: Path) -> Path:
    """A copy of the engine's package start (its __init__ and bytecode module), one
    submodule of ours, and a foreign package beside it."""
    (tmp_path / "engine" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "bytecode.py"):
        shutil.copy(ROOT / "engine" / name, tmp_path / "engine" / name)
    (tmp_path / "engine" / "sub" / "__init__.py").write_text("")
    (tmp_path / "engine" / "sub" / "x.py").write_text("VALUE = 1\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "__init__.py").write_text("")
    (tmp_path / "other" / "y.py").write_text("VALUE = 2\n")
    return tmp_path


def _run(folder: Path, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k != "HANDOFF_WRITE_BYTECODE"}
    full.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(folder), **env)
    out = subprocess.run([sys.executable, "-c", "import engine.sub.x as x, other.y as y; print(x.VALUE, y.VALUE)"],
                         capture_output=True, text=True, env=full, cwd=str(folder), timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_engine_bytecode_is_written_and_kept_fresh(tmp_path):
    folder = _package(tmp_path)
    assert _run(folder) == "1 2"
    cached = list((folder / "engine" / "sub" / "__pycache__").glob("x.*.pyc"))
    assert len(cached) == 1
    assert not (folder / "other" / "__pycache__").exists()  # not ours: the interpreter's setting holds
    (folder / "engine" / "sub" / "x.py").write_text("VALUE = 10\n# longer, so the size differs too\n")
    assert _run(folder) == "10 2"  # the old .pyc is checked against the source, never run stale


def test_handoff_write_bytecode_0_keeps_the_interpreters_setting(tmp_path):
    folder = _package(tmp_path)
    assert _run(folder, HANDOFF_WRITE_BYTECODE="0") == "1 2"
    assert not (folder / "engine" / "sub" / "__pycache__").exists()
