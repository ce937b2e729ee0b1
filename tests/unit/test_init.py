"""`handoff init`: a new ledger from a template, never over an existing file; and the
acceptance test of issue 9: each template, with its placeholder commands replaced,
passes `check --strict` and runs to the end under `resume` with `approve`.

Real processes throughout: the CLI, the sessions and the steps they run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.codec import strict
from engine.codec.emit import block
from tests.conftest import ROOT, handoff

TEMPLATES = ("blank", "k8s-rollout", "pg-fleet", "tls-rotation")


def test_list_shows_each_template_with_one_line():
    result = handoff("init", "--list")
    assert result.returncode == 0
    lines = result.stdout.strip().split("\n")
    assert [line.split()[0] for line in lines] == list(TEMPLATES)
    assert all(len(line.split(None, 1)[1]) > 20 for line in lines)


def test_init_writes_a_ledger_with_the_schema_line_and_the_given_targets(tmp_path):
    """Targets from --target, the schema line first, started filled in, the schema file beside it."""
    path = tmp_path / "ledger.yaml"
    result = handoff("init", path, "--template", "pg-fleet", "--target", "db-a", "--target", "db b", "--as", "alice")
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=./ledger.schema.json\n")
    data = strict.load(text, str(path))
    assert data["targets"] == {"db-a": {"state": "queued"}, "db b": {"state": "queued"}}
    assert data["owner_shift"] == "alice" and data["started"] != "2026-01-01T00:00Z"
    assert json.loads((tmp_path / "ledger.schema.json").read_text())["title"] == "handoff ledger (format v1)"
    for step in ("handoff check --strict", "handoff resume --ledger", "--dry-run"):
        assert step in result.stdout


def test_targets_from_a_file_skip_blanks_and_comments(tmp_path):
    names = tmp_path / "targets.txt"
    names.write_text("# the fleet\nsvc-01\n\n  svc-02  \nsvc-03\n")
    path = tmp_path / "tls.yaml"
    assert handoff("init", path, "--template", "tls-rotation", "--targets", names).returncode == 0
    assert list(strict.load(path.read_text(), str(path))["targets"]) == ["svc-01", "svc-02", "svc-03"]


def test_targets_from_stdin(tmp_path):
    path = tmp_path / "l.yaml"
    assert handoff("init", path, "--template", "blank", "--targets", "-", input="a\nb\n").returncode == 0
    assert list(strict.load(path.read_text(), str(path))["targets"]) == ["a", "b"]


def test_an_existing_file_is_never_overwritten(tmp_path):
    """Exit 1, a one-line reason, the file byte-identical; the schema file beside it is kept too."""
    path = tmp_path / "ledger.yaml"
    path.write_bytes(b"task: mine\ntargets: {}\n")
    schema = tmp_path / "ledger.schema.json"
    schema.write_bytes(b"{}")
    result = handoff("init", path, "--template", "blank")
    assert result.returncode == 1
    assert "already exists; nothing was written" in result.stderr and len(result.stderr.strip().split("\n")) == 1
    assert path.read_bytes() == b"task: mine\ntargets: {}\n" and schema.read_bytes() == b"{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.schema.json", "ledger.yaml"]


@pytest.mark.parametrize("args, message", [
    (("--template", "nope"), "no template called 'nope'"),
    ((), "say which template"),
    (("--template", "blank", "--target", "a", "--target", "a"), "named twice"),
    (("--template", "blank", "--target", " a"), "not a target name"),
    (("--template", "blank", "--targets", "/nonexistent/targets.txt"), "cannot read /nonexistent/targets.txt"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, args, message):
    path = tmp_path / "ledger.yaml"
    result = handoff("init", path, *args)
    assert result.returncode == 2 and message in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_a_usage_error(tmp_path):
    result = handoff("init", tmp_path / "nope" / "ledger.yaml", "--template", "blank")
    assert result.returncode == 2 and "does not exist" in result.stderr and list(tmp_path.iterdir()) == []


def test_target_and_targets_together_are_a_usage_error(tmp_path):
    names = tmp_path / "t.txt"
    names.write_text("a\n")
    result = handoff("init", tmp_path / "l.yaml", "--template", "blank", "--target", "b", "--targets", names)
    assert result.returncode == 2 and not (tmp_path / "l.yaml").exists()


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_fresh_template_is_valid_and_names_every_placeholder_under_strict(tmp_path, name):
    """As written: no problem; --strict names each command still the template's placeholder."""
    path = tmp_path / "ledger.yaml"
    assert handoff("init", path, "--template", name).returncode == 0
    assert handoff("check", path).returncode == 0
    result = handoff("check", path, "--strict", "--json")
    data = json.loads(result.stdout)
    assert result.returncode == 1
    placeholders = [f for f in data["findings"] if "still the template's placeholder" in f["message"]]
    assert placeholders and len(placeholders) == len(data["problems"])
    ledger = strict.load(path.read_text(), str(path))
    for step in ledger["runbook"]["steps"]:
        assert any(f"runbook step {step['name']} is still" in f["message"] for f in placeholders), step["name"]


def test_a_placeholder_fails_loudly_when_run(tmp_path):
    """A session on an untouched template: the first step fails, and says what to replace."""
    path = tmp_path / "ledger.yaml"
    assert handoff("init", path, "--template", "blank", "--target", "t1").returncode == 0
    data = strict.load(path.read_text(), str(path))
    data["metrics"]["error_percent_5m"]["run"] = ["echo", "0"]  # so the session reaches the step
    _write(path, data)
    handoff("resume", "--ledger", path, timeout=60)
    target = strict.load(path.read_text(), str(path))["targets"]["t1"]
    assert target["state"] == "failed" and "TEMPLATE PLACEHOLDER: replace the run of step prepare" in target["reason"]


def _write(path: Path, data: dict) -> None:
    """The data as YAML through the engine's own emitter (YAML 1.2 spellings, `on:` stays a key)."""
    path.write_text("\n".join(block(data)) + "\n", encoding="utf-8")


def _replace_commands(path: Path) -> None:
    """As issue 9 says: each step's run and check and each notify run by `true`, each
    verify by `echo ok`, each metric command and each run of a step with `until` by `echo 0`."""
    data = strict.load(path.read_text(), str(path))
    for step in data["runbook"]["steps"]:
        step["run"] = ["echo", "0"] if step.get("until") else ["true"]
        if "check" in step:
            step["check"] = ["true"]
        if "verify" in step:
            step["verify"] = ["echo", "ok"]
    for metric in data["metrics"].values():
        metric["run"] = ["echo", "0"]
    for entry in data["notify"]:
        if "run" in entry:
            entry["run"] = ["true"]
    _write(path, data)


@pytest.mark.parametrize("name", TEMPLATES)
def test_each_template_runs_to_the_end_once_its_commands_are_replaced(tmp_path, name):
    """Acceptance: init, replace the commands, `check --strict` passes, then resume and
    approve until every target is done (each resume exits 0; a bounded number of rounds)."""
    path = tmp_path / "ledger.yaml"
    assert handoff("init", path, "--template", name, "--target", "t1", "--target", "t2", "--target", "t3").returncode == 0
    _replace_commands(path)
    check = handoff("check", path, "--strict")
    assert check.returncode == 0, check.stdout
    approvals = 0
    for _ in range(8):
        result = handoff("resume", "--ledger", path, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        status = json.loads(handoff("status", path, "--json").stdout)
        if all(t["state"] == "done" for t in status["targets"].values()):
            break
        assert status["awaiting"], f"no progress possible without an approval: {status['counts']}"
        for item in status["awaiting"]:
            assert handoff("approve", path, item["target"], "--as", "oncall").returncode == 0
            approvals += 1
    else:
        pytest.fail(f"not done after 8 sessions: {status['counts']}")
    assert approvals >= 3  # every template has at least one irreversible step per target
    records = [json.loads(line) for line in (tmp_path / "ledger.yaml.journal.jsonl").read_text().splitlines()]
    assert not [r for r in records if r["kind"] in ("session_refused", "paused", "discrepancy")]


def test_templates_ship_beside_the_examples():
    """engine.bundled finds the templates where the wheel puts them (ledgers/templates)."""
    from engine.bundled import templates_dir

    assert templates_dir() == ROOT / "ledgers" / "templates"
    assert sorted(p.stem for p in templates_dir().glob("*.yaml")) == list(TEMPLATES)
