"""Every HANDOFF_* variable is in the one table (engine.settings), and the table is what
`handoff --help` and docs/operating.md show."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from engine import settings
from tests.conftest import ROOT


def names_in_source() -> set[str]:
    found: set[str] = set()
    for folder in ("engine", "tui"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found |= set(re.findall(r"\bHANDOFF_[A-Z][A-Z_]*[A-Z]\b", node.value))
    return found


def test_every_variable_the_source_names_is_in_the_table():
    assert names_in_source() - set(settings.BY_NAME) == set()


def test_docs_list_every_setting_with_its_default():
    text = (ROOT / "docs" / "operating.md").read_text(encoding="utf-8")
    section = text.split("## Environment", 1)[1].split("\n## ", 1)[0]
    for s in settings.SETTINGS:
        assert f"`{s.name}`" in section, s.name
        if not s.internal and s.default is not None:
            shown = f"{s.default:g} s" if s.unit == "seconds" else str(s.default)
            assert f"| `{s.name}` | {shown} |" in section, s.name


def test_help_prints_the_table():
    out = subprocess.run([sys.executable, "-m", "engine.cli.main", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0
    for s in settings.SETTINGS:
        assert (s.name in out.stdout) != s.internal, s.name


def test_an_unusable_number_means_the_default(monkeypatch):
    for value in ("", "soon", "-1", "nan", "0"):
        monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", value)
        assert settings.seconds("HANDOFF_LOCK_TIMEOUT") == 10.0, value
    monkeypatch.setenv("HANDOFF_DB_OUTAGE_SECONDS", "0")
    assert settings.seconds("HANDOFF_DB_OUTAGE_SECONDS") == 0.0  # zero is meaningful there: stop at once
    monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", "2.5")
    assert settings.seconds("HANDOFF_LOCK_TIMEOUT") == 2.5
