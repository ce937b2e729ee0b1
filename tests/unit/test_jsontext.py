"""`handoff status --json` is encoded by orjson (engine.codec.jsontext), and says what
json's own encoder would: keys YAML read as numbers or booleans, text with escapes and
non-ASCII letters, and (through json) a number past 64 bits that YAML holds. `plain`
(the history journal's records) gives exactly what a round trip through json gives."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from engine.codec.jsontext import dumps, plain
from engine.codec.numbers import SrcFloat, SrcInt, same
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


def _through_json(value):
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


# What YAML can hand the history journal, beside JSON's own types: each must come out as json's round trip
# gives it, of the same types all the way down (numbers.same: 1 is not 1.0 is not True, NaN is NaN).
ODD = {
    "spelled numbers": {"checkpoint": SrcFloat("1.30"), "port": SrcInt("+5432"), "zero": SrcFloat("-0.0")},
    "a date": {"verified_at": date(2026, 9, 10)},
    "a timestamp": {"at": datetime(2026, 9, 10, 1, 52, tzinfo=timezone.utc)},
    "NaN": {"lag": float("nan"), "ok": 1.5},
    "a key that is a number": {7: "seven", "8": "eight"},
    "a boolean key": {True: "yes"},
    "a tuple": {"argv": ("link", "db-18")},
    "a set": {"tags": {"a"}},
    "past 64 bits": {"bytes": 2**70},
    "a lone surrogate": {"text": "\ud800"},
    "escapes and letters": {"text": COMMON["text"], "floats": COMMON["floats"]},
}


@pytest.mark.parametrize("name", list(ODD))
def test_plain_is_exactly_jsons_round_trip(name: str) -> None:
    value = {"targets": {"db-01": ODD[name], "db-02": {"state": "done"}}}
    expected = _through_json(value)
    got = plain(value)
    assert same(got, expected), (got, expected)


def test_plain_takes_orjsons_path_for_what_a_ledger_holds(monkeypatch):
    """Targets of JSON's types and spelled numbers never fall back to json (a fallback would
    hide the lost speed of the history journal's first record)."""
    import engine.codec.jsontext as jsontext

    value = {"task": "t", "targets": {f"db-{i:02d}": {"state": "done", "checkpoint": SrcFloat("1.30"), "tries": SrcInt("+1"),
                                                      "lag": 0.25, "approvals": [{"by": "alice", "hash": "90118711690768e1"}]}
                                      for i in range(40)}}
    expected = _through_json(value)

    class NoFallback:
        @staticmethod
        def dumps(*_args, **_kwargs):
            raise AssertionError("fell back to json")

    monkeypatch.setattr(jsontext, "json", NoFallback)
    assert same(plain(value), expected)
