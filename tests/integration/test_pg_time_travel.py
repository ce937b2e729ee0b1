"""A PostgreSQL ledger: `show --at REV` rebuilds the whole ledger as each revision stored it.

Real server (HANDOFF_TEST_PG, default postgresql://127.0.0.1/test), real `handoff`
processes: an import, a note, two sessions, an approval, a pause, an `import --replace`,
the stored text exported after each; `show --at` of each revision parses to the same
content, every write's `ledger_write` record sits in the `LEDGER#history` rows of the
journal table (committed with the ledger's row), and none is in the ledger's journal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")

LEDGER = """\
task: rebuild in postgres
owner_shift: test-oncall
site_notes: {kept: [1, 2]}
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
  - {name: link, from: checked, to: done, run: ["echo", "{target}"]}
targets:
  db-1: {state: queued, owner: alice}
  db-2: {state: queued}
"""


def handoff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def _ok(*args: str) -> str:
    result = handoff(*args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


@pytest.fixture(scope="session", autouse=True)
def server_is_up():
    """PostgreSQL must be there: a missing server fails these tests, it never skips them."""
    import psycopg

    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not reachable at {PG}: {err}")


def _rows(name: str) -> list[dict]:
    import psycopg

    with psycopg.connect(PG) as conn:
        return [r[0] for r in conn.execute("SELECT record FROM handoff_journal WHERE ledger = %s ORDER BY seq", (name,))]


def test_show_at_each_revision_is_the_stored_ledger(tmp_path: Path) -> None:
    name = f"record-tt-{uuid.uuid4().hex[:10]}"
    url = f"{PG}#{name}"
    source = tmp_path / "ledger.yaml"
    source.write_text(LEDGER)
    seen: dict[int, dict] = {}

    def keep() -> None:
        data = yaml.safe_load(_ok("export", url))
        seen[data.get("revision", 0)] = data

    _ok("import", source, url); keep()
    _ok("note", url, "--set", "db-1 first", "--as", "alice"); keep()
    _ok("resume", url); keep()
    _ok("approve", url, "db-1", "--as", "alice"); keep()
    _ok("pause", url, "--reason", "change freeze", "--as", "bob"); keep()
    replaced = yaml.safe_load(_ok("export", url))
    replaced["site_notes"] = {"kept": [3], "by": "import"}
    replaced.pop("paused", None)
    source.write_text(yaml.safe_dump(replaced, sort_keys=False))
    _ok("import", source, url, "--replace"); keep()  # a new text whole: journaled whole
    _ok("resume", url); keep()
    assert len(seen) == 7
    for rev, data in seen.items():
        shown = handoff("show", url, "--at", str(rev))
        assert shown.returncode == 0, shown.stderr
        assert yaml.safe_load(shown.stdout) == data, rev
        assert json.loads(handoff("show", url, "--at", str(rev), "--json").stdout)["ledger"] == data
    writes = _rows(f"{name}#history")
    assert [r["rev"] for r in writes] == sorted(r["rev"] for r in writes) and len(writes) >= len(seen)
    assert sum("full" in r for r in writes) == 2  # the import and the import --replace
    assert not [r for r in _rows(name) if r["kind"] == "ledger_write"]
    out = handoff("diff", url, str(min(seen)), str(max(seen))).stdout
    assert "site_notes.kept: [1, 2] -> [3]" in out and "targets.db-1.state: queued -> done" in out
