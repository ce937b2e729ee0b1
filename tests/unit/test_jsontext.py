"""`handoff status --json` is encoded by orjson (engine.codec.jsontext), and says what
json's own encoder would: keys YAML read as numbers or booleans, text with escapes and
non-ASCII letters, and (through json) a number past 64 bits that YAML holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.codec.jsontext import dumps
from tests.conftest import cli_env

COMMON = {"negative": -(2**63), 7: "a key YAML read as a number", True: "a key YAML read as a boolean",
          "text": "é\u2028\x1b\"\\ \u00a0\x7f", "floats": [1.5, 1e16, -0.0, 1e-05], "none": None,
          "nested": {"list": [True, False, {}]}}


def test_what_a_ledger_holds_goes_through_orjson_and_reads_back_as_json_s(monkeypatch):
    """The common shapes never fall back to json (a fallback would hide a lost speed), and
    say what json's encoder says (1e-05 is spelled 0.00001: the same number)."""
    import engine.codec.jsontext as jsontext

    expected = json.loads(json.dumps(COMMON))

    class NoFallback:
        @staticmethod
        def dumps(*_args, **_kwargs):
            raise AssertionError("fell back to json")

    monkeypatch.setattr(jsontext, "json", NoFallback)
    text = dumps(COMMON)
    assert json.loads(text) == expected
    assert dumps({"a": [1, "b"]}) == '{"a":[1,"b"]}'  # compact, one line


def test_a_number_past_64_bits_goes_through_json():
    value = {"big": 2**70, "negative": -(2**65), "text": "é"}
    assert dumps(value) == '{"big":1180591620717411303424,"negative":-36893488147419103232,"text":"é"}'


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
