"""The engine never imports a screen library, and `handoff status` does not pay for the
agent's or the watcher's libraries: checked in fresh subprocesses."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import engine
from tests.conftest import ROOT, cli_env

FORBIDDEN_UI = ("textual", "rich", "tui")


def _engine_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(engine.__path__, "engine.") if not m.name.endswith("__main__"))


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=60)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_every_engine_module_imports_without_textual_or_rich():
    """Importing each engine module (one fresh process for all, checked one by one) loads no textual, rich or tui."""
    modules = _engine_modules()
    assert "engine.store.file" in modules and "engine.cli.commands" in modules
    code = (
        "import importlib, sys, json\n"
        "bad = {}\n"
        f"for name in {modules!r}:\n"
        "    before = set(sys.modules)\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as err:\n"
        "        bad[name] = 'ImportError: ' + str(err)\n"
        "        continue\n"
        "    ui = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'tui'))\n"
        "    if ui:\n"
        "        bad[name] = ui[:3]\n"
        "        break\n"
        "print(json.dumps(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {}


def test_each_engine_module_alone_in_a_fresh_process():
    """Each engine module imported alone (its own process) pulls in no textual or rich."""
    code = (
        "import importlib, subprocess, sys, json\n"
        f"mods = {_engine_modules()!r}\n"
        "procs = {m: subprocess.Popen([sys.executable, '-c', f'import {m}, sys; print(sorted(x for x in sys.modules if x.split(\".\")[0] in (\"textual\", \"rich\", \"tui\")))'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m in mods}\n"
        "out = {}\n"
        "for m, p in procs.items():\n"
        "    o, e = p.communicate()\n"
        "    if p.returncode != 0 or o.strip() != '[]':\n"
        "        out[m] = (p.returncode, o.strip(), e.strip()[-200:])\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {}


def test_handoff_status_does_not_import_anthropic_httpx_or_watchfiles(article):
    """`handoff status` (text and --json) runs without loading anthropic, httpx or watchfiles."""
    for extra in ([], ["--json"]):
        code = (
            "import sys, io, contextlib\n"
            "from engine.cli.main import main\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            f"    code = main(['status', {str(article)!r}] + {extra!r})\n"
            "assert code == 0, code\n"
        )
        loaded = _loaded_after(code)
        heavy = sorted(m for m in loaded if m.split(".")[0] in ("anthropic", "httpx", "httpx2", "httpcore", "watchfiles", "textual", "rich"))
        assert heavy == [], heavy


def test_handoff_status_importtime_lists_no_heavy_package(article):
    """`python -X importtime -m engine.cli.main status` shows no anthropic/httpx/watchfiles import at all."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "engine.cli.main", "status", str(article), "--json"],
        capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=60,
    )
    assert result.returncode == 0, result.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "engine" in imported  # the probe sees our imports at all
    assert not imported & {"anthropic", "httpx", "httpx2", "watchfiles", "textual", "rich"}
