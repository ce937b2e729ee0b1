"""Every `handoff run` left the journal "broken" (found by review round toctou, stop 54).

Promise (README): `handoff check` exits 0 when the ledger is valid; "journal chain broken at its
end ... restore the journal from a copy if you have one, and find out who changed it" is the alarm
for records cut off the journal. `handoff run LEDGER TARGET` (Claude Code's hands) is a normal,
documented way to run a step.

What happens: `handoff run` gives its lease back with a ledger write (history: "revision N written:
session", `session` unset) that it never journals; `handoff check` then reports the journal
chain broken and exits 1 after one ordinary, successful run; `handoff journal --verify` too."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import cli_env, handoff


def test_check_is_clean_after_one_successful_handoff_run(tmp_path: Path) -> None:
    data = {"task": "run-then-check", "targets": {"a": {"state": "queued"}}, "runbook": {"steps": [
        {"name": "check", "from": "queued", "to": "done", "reversible": True, "run": ["/bin/echo", "{target}"]}]}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    ran = handoff("run", ledger, "a", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    checked = handoff("check", ledger, env=env)
    assert "journal chain broken" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr
    assert checked.returncode == 0, checked.stdout + checked.stderr
    verified = handoff("journal", ledger, "--verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
