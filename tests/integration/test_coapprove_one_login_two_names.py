"""`approvals: {count: 2}` under an `approvers:` table that names one OS login as a plain
approver (`root`) beside a verified one: that one login approves twice under two invented
names (`--as mallory1`, `--as mallory2`, neither in the table), both are admitted (the OS user
is a plain approver) and counted as two people, and the irreversible step runs on one login's
say-so: the login that also started the session that asked. On a file ledger and on a
PostgreSQL ledger (the same on every runtime: the guard counts names)."""

from __future__ import annotations

import getpass
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli_env, handoff

PG = "postgresql://127.0.0.1/test"
MARK = "import sys; open(sys.argv[1], 'a').write('x')"


def _ledger(tmp_path: Path, backend: str) -> tuple[str, Path]:
    runs = tmp_path / "runs.txt"
    data = {"task": "one-login", "owner_shift": "test-oncall",
            "approvers": [{"name": "alice", "os_user": "nobody"}, getpass.getuser()],
            "runbook": {"steps": [{"name": "cut", "from": "queued", "to": "done", "approvals": {"count": 2},
                                   "run": [sys.executable, "-c", MARK, str(runs)]}]},
            "targets": {"t1": {"state": "queued"}}}
    text = yaml.safe_dump(data, sort_keys=False)
    if backend == "file":
        path = tmp_path / "ledger.yaml"
        path.write_text(text)
        return str(path), runs
    from engine.store.postgres import PostgresStore

    location = f"{PG}#t-{uuid.uuid4().hex[:10]}"
    PostgresStore(location).import_text(text)
    return location, runs


@pytest.mark.parametrize("backend", ["file", "postgresql"])
def test_one_os_login_under_two_invented_names_is_not_two_people(tmp_path: Path, backend: str) -> None:
    location, runs = _ledger(tmp_path, backend)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    asked = handoff("resume", "--ledger", location, "--as", "robot", env=env)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    first = handoff("approve", location, "t1", "--yes", "--as", "mallory1", env=env)
    second = handoff("approve", location, "t1", "--yes", "--as", "mallory2", env=env)
    ran = handoff("resume", "--ledger", location, "--as", "robot", env=env)
    said = "\n".join(p.stdout + p.stderr for p in (first, second, ran))
    assert not runs.exists(), (
        f"one OS login ({getpass.getuser()}, a plain approver that also started the asking session) approved twice "
        f"under two names not in the approvers table, and cut (count: 2) ran on it:\n{said}")
    assert second.returncode == 1, said
