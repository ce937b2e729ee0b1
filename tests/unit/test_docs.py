"""The reference people read stays true: the README's ledger passes `check --strict`
and has what the README says it has, docs/ledger.md names every field of every model,
(docs/operating.md's keys: tests/tui/test_operating_doc.py, which may import Textual)."""

from __future__ import annotations

import re

from engine.codec import strict
from engine.ledger.invariants import parse
from engine.ledger.model import Ledger
from engine.ledger.schema import _models
from tests.conftest import ROOT, handoff

README = (ROOT / "README.md").read_text(encoding="utf-8")
LEDGER_DOC = (ROOT / "docs" / "ledger.md").read_text(encoding="utf-8")


def _readme_ledger() -> str:
    section = README.split("## Your own job", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def test_the_readme_ledger_passes_check_strict(tmp_path):
    """Four steps, the article's three invariants, one metric, one notify; no problem, no warning."""
    text = _readme_ledger()
    data = strict.load(text, "README.md")
    assert len(data["runbook"]["steps"]) == 4 and len(data["metrics"]) == 1 and len(data["notify"]) == 1
    assert [parse(i).kind for i in data["invariants"]] == ["precondition", "max_touched", "metric"]
    path = tmp_path / "ledger.yaml"
    path.write_text(text, encoding="utf-8")
    result = handoff("check", "--strict", path)
    assert result.returncode == 0, result.stdout


def test_the_readme_shows_the_two_commands_after_it():
    after = README.split("## Your own job", 1)[1].split("## Using it", 1)[0]
    assert "handoff check --strict ledger.yaml" in after and "handoff resume --ledger ledger.yaml" in after
    assert "handoff init" in after and "ledgers/" in after


def test_docs_name_every_field_of_every_model():
    """A field added to the model without a word in docs/ledger.md fails here."""
    missing = [f"{m.__name__}.{info.alias or name}" for m in _models(Ledger)
               for name, info in m.model_fields.items() if f"`{info.alias or name}`" not in LEDGER_DOC]
    assert missing == []


def test_docs_cover_placeholders_environment_and_exit_codes():
    for word in ("{target}", "{checkpoint}", "{ledger_dir}", "{python}", "HANDOFF_STEP_TOKEN", "working folder",
                 "max_age", "`handoff init`", "`handoff resume`", "`handoff check`", "`handoff-tui`"):
        assert word in LEDGER_DOC, word
