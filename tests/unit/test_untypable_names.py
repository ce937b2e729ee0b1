"""A name nobody can type (empty, spaces only, or only characters that draw nothing) is refused
where the ledger is read: the typed-name check before an irreversible step, and the step's name
typed to approve a batch, could otherwise pass with nothing typed (a review found Ctrl-C at
`handoff approve`'s prompt, or Enter twice in the TUI's dialog, approved a target named "")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import approve_cmd
from tests.conftest import cli_env, handoff

STEP = {"name": "cutover", "from": "verified", "to": "done", "reversible": False,
        "run": ["/usr/local/sbin/fleet-cutover", "--cluster={target}"]}


def _write(tmp_path: Path, name: str, step: dict = STEP) -> Path:
    """The target named `name` on line 7."""
    path = tmp_path / "ledger.yaml"
    path.write_text(f"task: t\nrunbook:\n  steps:\n  - {json.dumps(step)}\ntargets:\n  db-01: {{state: queued}}\n"
                    f"  {json.dumps(name)}: {{state: awaiting_approval, awaiting: cutover, awaiting_by: agent}}\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["", "   ", "\u200b", "\u202e\u2066"], ids=["empty", "spaces", "zero-width", "bidi"])
def test_a_target_nobody_can_type_is_refused_with_its_line(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, name)
    before = path.read_bytes()
    for args in (("check", path), ("approve", path, name, "--yes", "--as", "alice")):
        result = handoff(*args, env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.startswith(f"handoff: {path}:7:"), result.stderr
        assert f"target {name!r} has no name a person can see or type" in result.stderr
        assert "give it a name" in result.stderr and "Traceback" not in result.stderr
        assert path.read_bytes() == before


def test_a_step_nobody_can_type_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "db-02", {**STEP, "name": " \u200b"})
    before = path.read_bytes()
    result = handoff("check", path, env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
    assert result.returncode == 2 and "step name ' \\u200b' is nothing a person can see or type" in result.stderr, result.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("typed", ["", "db-0"])
def test_nothing_typed_at_the_prompt_never_approves(monkeypatch: pytest.MonkeyPatch, typed: str) -> None:
    """Ctrl-C and end of input read as "" (read_answer): never a yes, even for a name that were ""."""
    monkeypatch.setattr(approve_cmd, "read_answer", lambda prompt: typed)
    assert approve_cmd._ask(typed) is (typed != "")
    assert approve_cmd._ask("db-01") is False
