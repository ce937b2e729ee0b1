"""`handoff status --json` is encoded by orjson (engine.codec.jsontext), and says what
json's own encoder would: a number past 64 bits that YAML holds, keys YAML read as
numbers, text with escapes and non-ASCII letters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.codec.jsontext import dumps
from tests.conftest import cli_env

ODD = {"big": 2**70, "negative": -(2**65), 7: "a key YAML read as a number", "text": "é\u2028\x1b\"\\ \u00a0",
       "floats": [1.5, 1e16, -0.0], "none": None, "nested": {"list": [True, False, {}]}}


def test_the_same_json_as_json_s_encoder():
    assert json.loads(dumps(ODD)) == json.loads(json.dumps(ODD))
    assert dumps({"a": [1, "b"]}) == '{"a":[1,"b"]}'  # compact, one line


def test_status_json_with_a_number_past_64_bits(tmp_path: Path):
    """A ledger holding an integer orjson cannot encode still gives its status, that number exact."""
    ledger = tmp_path / "ledger.yaml"
    text = "task: t\ntargets:\n  db-1: {state: queued, bytes: 123456789012345678901234567890}\n  \"7\": {state: done}\n"
    ledger.write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "engine.cli.main", "status", str(ledger), "--json"], capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path), env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["counts"] == {"queued": 1, "done": 1} and set(shown["targets"]) == {"db-1", "7"}
    assert ledger.read_text(encoding="utf-8") == text
    assert "123456789012345678901234567890" in done.stdout
