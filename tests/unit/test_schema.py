"""`handoff schema` says what the engine accepts: every example ledger and template
validates against it with a real JSON Schema validator, the spellings the engine
accepts (a `run` string, `paused: true`, a bare target) do too, what `check` calls a
typo does not, and every field of every model is in it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from engine.codec import strict
from engine.ledger.model import Ledger
from engine.ledger.schema import _models
from engine.store.convert import to_ledger
from tests.conftest import ARTICLE, ROOT, handoff

LEDGERS = sorted(p for p in (ROOT / "ledgers").rglob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    result = handoff("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)  # it is a valid schema itself
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, text: str) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(strict.load(text, "x.yaml"))]


def test_the_shipped_ledgers_are_all_here():
    names = {str(p.relative_to(ROOT / "ledgers")) for p in LEDGERS}
    assert {"pg16-fleet.yaml", "demo/ledger.yaml", "templates/pg-fleet.yaml", "templates/blank.yaml"} <= names


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: str(p.relative_to(ROOT / "ledgers")))
def test_every_example_and_template_validates(validator, path: Path):
    assert _errors(validator, path.read_text()) == []


def test_the_articles_ledger_validates(validator):
    assert _errors(validator, ARTICLE) == []


ACCEPTED = {
    "run as a string": "runbook:\n  steps:\n  - {name: a, from: queued, to: done, run: 'echo hi {target}', check: echo, verify: [echo, 1]}\n",
    "numbers in an argv": "runbook:\n  steps:\n  - {name: a, from: queued, to: done, run: [sleep, 5]}\n",
    "paused: true": "paused: true\n",
    "paused: a reason": "paused: incident INC-12\n",
    "metric run as a string": "metrics:\n  m: {run: echo 1}\n",
    "notify run as a string": "notify:\n- {run: pager --team x}\n",
    "a number as task": None,
    "unknown top-level keys": "team_channel: '#ops'\n",
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_what_the_engine_loads_the_schema_accepts(validator, name):
    """Each spelling loads in the engine, and the schema agrees (it said `run` must be a list)."""
    extra = ACCEPTED[name]
    if extra is None:
        text = "task: 2026\ntargets:\n  db-1: {state: queued, checkpoint: 42}\n  db-2:\n"
    else:
        text = "task: t\n" + extra + "targets:\n  db-1: {state: queued, checkpoint: 42}\n  db-2:\n"
    to_ledger(strict.load(text, "x.yaml"), "x.yaml", text)  # the engine accepts it
    assert _errors(validator, text) == []


REFUSED = {
    "misspelt step key": ("runbook:\n  steps:\n  - {name: a, from: queued, to: done, runn: [x]}\n", "runn"),
    "misspelt metric key": ("metrics:\n  m: {run: [x], descripton: y}\n", "descripton"),
    "negative budget": ("budget: {minutes: -0.05}\n", "-0.05"),
    "handoff_at above 1": ("budget: {handoff_at: 5}\n", "5"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_check_calls_a_problem_the_schema_flags(validator, name):
    """An editor shows as you type what `handoff check` would report."""
    extra, word = REFUSED[name]
    errors = _errors(validator, "task: t\n" + extra + "targets: {}\n")
    assert errors and word in " ".join(errors)


def test_every_model_field_is_in_the_schema():
    """A field added to any model (issue 8, 11, 12 add some) cannot be missing from the schema."""
    schema = json.loads(handoff("schema").stdout)
    missing = []
    for model in _models(Ledger):
        props = schema["properties"] if model is Ledger else schema["$defs"][model.__name__]["properties"]
        for name, info in model.model_fields.items():
            if (info.alias or name) not in props:
                missing.append(f"{model.__name__}.{info.alias or name}")
    assert len(_models(Ledger)) >= 10 and missing == []
