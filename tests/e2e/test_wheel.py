"""The wheel a user installs: built from the repository's files, installed into a fresh
venv, it carries `ledgers/` (demo fleet, examples, templates), so `handoff init` and
`handoff-tui --demo` work there with no checkout anywhere on the path.

The fresh venv gets the project's dependencies from the test venv's site-packages
through a `.pth` line (downloading textual, pydantic and the rest again would only
test the package index); the project itself comes from the wheel alone, which the
test proves by asking the fresh interpreter where `engine` lives.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.e2e


def _clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH and no venv of the caller: only what the fresh venv gives."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel built from this repository's files installed; its bin/."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    # The files a clone has (tracked, or new and not ignored): never a demo world or a venv.
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("handoff_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "ledgers/demo/ledger.yaml" in names and "ledgers/templates/pg-fleet.yaml" in names
    assert "ledgers/pg16-fleet.yaml" in names and not any(n.startswith("tests/") for n in names)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Appended after the venv's own site-packages, so `engine` resolves to the wheel's copy.
    (Path(purelib) / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def test_the_installed_engine_is_the_wheels(installed: Path, tmp_path: Path):
    """`engine` and the bundled ledgers come from the fresh venv, not from this checkout."""
    probe = "import engine.bundled as b; print(b.__file__); print(b.templates_dir())"
    result = subprocess.run([str(installed / "python"), "-c", probe], capture_output=True, text=True,
                            env=_clean_env(), cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    module, templates = result.stdout.split()
    venv = str(installed.parent)
    assert module.startswith(venv) and templates.startswith(venv) and not module.startswith(str(ROOT))


def test_init_from_the_installed_wheel(installed: Path, tmp_path: Path):
    """`handoff init` finds its templates in the wheel; the ledger it writes passes `check`."""
    env = _clean_env()
    result = subprocess.run([str(installed / "handoff"), "init", "--template", "k8s-rollout", "--target", "prod-a"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ledger.yaml").is_file() and (tmp_path / "ledger.schema.json").is_file()
    check = subprocess.run([str(installed / "handoff"), "check", "ledger.yaml"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_demo_from_the_installed_wheel_shows_the_fleet(installed: Path, tmux, tmp_path: Path):
    """`handoff-tui --demo` from the wheel copies the demo fleet and shows it on screen."""
    folder = tmp_path / "demo"
    tmux.width, tmux.height = 120, 40
    tmux.start([str(installed / "handoff-tui"), "--demo", str(folder), "--as", "newcomer"],
               env={"XDG_STATE_HOME": str(tmp_path / "state")}, cwd=tmp_path)
    try:
        tmux.wait_for("OPERATOR: newcomer", timeout=30)
        screen = tmux.wait_for("db-18", timeout=20, what="the demo fleet's targets")
        assert "db-19" in screen
        tmux.send("q")
        assert tmux.wait_exit() == 0
    finally:
        pid_file = folder / "director.pid"
        if pid_file.exists():
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass  # it had already finished
    assert (folder / "ledger.yaml").is_file() and (folder / "sim.py").is_file()
