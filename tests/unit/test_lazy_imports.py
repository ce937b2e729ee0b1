"""A command pays only for what it uses: `engine.api` (status, approve, the TUI) loads
no asyncio (only `watch()` needs it, through the store), and neither it nor the Claude
Code hook loads the anthropic SDK, Temporal, psycopg or LangGraph."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("asyncio", "anthropic", "temporalio", "psycopg", "langgraph")


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_engine_api_loads_none_of_the_heavy_modules():
    assert loaded_after("import engine.api") == []


def test_the_hook_modules_load_none_of_them():
    assert loaded_after("import engine.hooks.protocol, engine.hooks.pre_tool, engine.hooks.context") == []


def test_the_ledger_model_is_built_without_pydantics_plugin_search():
    """Building the model reads no distribution's metadata (pydantic's plugin search), and the
    switch that turns the search off is put back as it was: a child process never sees it."""
    probe = ("import importlib.metadata as md, json, os, sys\n"
             "calls = []\n"
             "real = md.entry_points\n"
             "md.entry_points = lambda *a, **k: calls.append(k) or real(*a, **k)\n"
             "import engine.ledger.model\n"
             "print(json.dumps([calls, os.environ.get('PYDANTIC_DISABLE_PLUGINS')]))")
    for given in (None, "logfire"):
        env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
        if given is not None:
            env["PYDANTIC_DISABLE_PLUGINS"] = given
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=str(ROOT),
                             env=env)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == [[], given]


def test_the_screen_loads_the_editor_and_the_timeline_table_only_when_opened():
    """The note editor's TextArea and the timeline's DataTable are loaded when first opened
    (tests/tui/test_lost_words.py and test_timeline.py open them), not at every start."""
    probe = ("import sys, json, tui.app\n"
             "print(json.dumps([m for m in ('textual.widgets._text_area', 'textual.widgets._data_table',"
             " 'tui.screens.note_editor', 'tui.screens.timeline') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
