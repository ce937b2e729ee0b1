"""A hand edit leaves a trace however the files beside the ledger were handled: with the kept
fields deleted (they are a cache: what the engine last wrote comes from the journal's history),
with the write record deleted (a ledger with a past is not taken for the engine's own), and
when the engine write that took the edit in was killed before it journaled it. Each time the
engine journals an `external_edit`, and a move no runbook step makes (queued -> linked, past
the irreversible `link`) stops the session (exit 3). Review helper's findings."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli_env, handoff, killed_at_failpoint


def _ledger(tmp_path: Path) -> tuple[Path, Path, dict]:
    runs = tmp_path / "runs.txt"
    data = {"task": "t", "runbook": {"steps": [
        {"name": "check", "from": "queued", "to": "checked", "reversible": True,
         "run": [sys.executable, "-c", f"open({str(runs)!r}, 'a').write('check\\n')"]},
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, "-c", f"open({str(runs)!r}, 'a').write('link\\n')"]},
        {"name": "tidy", "from": "linked", "to": "done", "reversible": True,
         "run": [sys.executable, "-c", f"open({str(runs)!r}, 'a').write('tidy\\n')"]}]},
        "targets": {"a": {"state": "queued"}, "b": {"state": "checked"}, "c": {"state": "checked"}}}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    assert handoff("note", path, "--set", "engine write", env=env).returncode == 0
    return path, runs, env


def _kinds(path: Path) -> list[str]:
    lines = Path(str(path) + ".journal.jsonl").read_text().splitlines()
    return [json.loads(line)["kind"] for line in lines if line.strip()]


@pytest.mark.parametrize("gone", [None, ".last-write.targets.json", ".last-write.json",
                                  ".last-write.targets.json+.last-write.json"])
def test_a_state_jump_by_hand_stops_the_session_whatever_sidecar_is_gone(tmp_path: Path, gone: str | None) -> None:
    path, runs, env = _ledger(tmp_path)
    for suffix in (gone or "").split("+"):
        if suffix:
            Path(str(path) + suffix).unlink()  # `git clean`, or the agent
    data = yaml.safe_load(path.read_text())
    data["targets"]["a"]["state"] = "linked"  # queued -> linked: the irreversible link never ran
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    session = handoff("resume", "--ledger", path, env=env)
    said = session.stdout + session.stderr
    assert "tidy" not in (runs.read_text() if runs.exists() else ""), f"the session acted on the jump:\n{said}"
    assert session.returncode == 3, said
    assert "external_edit" in _kinds(path)
    assert yaml.safe_load(path.read_text())["targets"]["a"]["changed_outside"]["fields"] == ["state"]


def test_a_target_removed_by_hand_with_the_record_gone_is_refused(tmp_path: Path) -> None:
    path, _, env = _ledger(tmp_path)
    Path(str(path) + ".last-write.json").unlink()
    data = yaml.safe_load(path.read_text())
    del data["targets"]["c"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    cut = path.read_text()
    result = handoff("note", path, "--set", "after the cut", env=env)
    assert result.returncode == 1 and "missing: c" in result.stderr and "--accept-removal" in result.stderr, result.stderr
    assert path.read_text() == cut


def test_a_hand_edit_taken_in_by_a_write_killed_after_its_swap_is_still_journaled(tmp_path: Path) -> None:
    """A person sets b's checkpoint by hand; the engine's next write (which would journal the
    edit) is killed -9 right after its swap. The next reader diffs it as a hand edit."""
    path, _, env = _ledger(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["targets"]["b"]["checkpoint"] = "0/FAKED"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    killed_at_failpoint("after-ledger-swap", "note", path, "--set", "absorbing", env=env)
    assert yaml.safe_load(path.read_text())["targets"]["b"]["checkpoint"] == "0/FAKED"
    assert "external_edit" not in _kinds(path)
    assert handoff("note", path, "--set", "next write", env=env).returncode == 0
    edits = [json.loads(line) for line in Path(str(path) + ".journal.jsonl").read_text().splitlines()
             if json.loads(line)["kind"] == "external_edit"]
    assert [(c["target"], c["field"], c["new"]) for c in edits[0]["changes"]] == [("b", "checkpoint", "0/FAKED")], edits
