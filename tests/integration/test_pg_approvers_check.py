"""`handoff check --strict` on a PostgreSQL ledger says what an `os_user` approver without an
`ssh_key` rests on there: the database role that recorded the approval (engine.store.pg_attest),
which proves it only where roles are kept apart. Real processes against the real server."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")

LEDGER = """\
task: approvers on a database
approvers:
  - {{name: bob, os_user: bob{key}}}
runbook:
  steps:
  - {{name: link, from: checked, to: done, run: ["echo", "{{target}}"]}}
targets:
  db-1: {{state: checked}}
"""
KEY = ", ssh_key: \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bob@laptop\""


def _handoff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_os_user_only_approvers_on_a_database_ledger_get_a_note(tmp_path: Path) -> None:
    url = f"{PG}#approvers-{uuid.uuid4().hex[:10]}"
    source = tmp_path / "ledger.yaml"
    source.write_text(LEDGER.format(key=""))
    assert _handoff("import", source, url).returncode == 0
    said = _handoff("check", url, "--strict")
    assert "approvers bob are proved by the database role that recorded their approval" in said.stdout, said.stdout
    assert "agents log in with roles that own no handoff table" in said.stdout and "ssh_key" in said.stdout
    assert "approvers bob are proved" not in _handoff("check", source, "--strict").stdout  # the kernel's files there
    keyed = tmp_path / "keyed.yaml"
    keyed.write_text(LEDGER.format(key=KEY))
    url2 = f"{PG}#approvers-{uuid.uuid4().hex[:10]}"
    assert _handoff("import", keyed, url2).returncode == 0
    assert "approvers bob are proved" not in _handoff("check", url2, "--strict").stdout
