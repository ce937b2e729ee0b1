"""Nothing imports langgraph unless the LangGraph runtime is asked for: not `handoff status`,
`check` or `approve` (even of a ledger a LangGraph thread holds), not the engine's API, not
`handoff resume` of the built-in session. Checked in fresh processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import ROOT, demo_copy, env, load  # noqa: E402

PROBE = ("import sys\nfrom engine.cli.main import main\ncode = main(sys.argv[1:])\n"
         "print('LANGGRAPH', any(m == 'langgraph' or m.startswith('langgraph.') for m in sys.modules))\nsys.exit(code)")


def _loaded(world: Path, *args: str) -> tuple[bool, subprocess.CompletedProcess]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env(world),
                            cwd=str(ROOT), timeout=60)
    assert "LANGGRAPH" in result.stdout, result.stdout + result.stderr
    return "LANGGRAPH True" in result.stdout, result


def test_only_the_langgraph_runtime_imports_langgraph(tmp_path: Path) -> None:
    from engine.lease import leasing
    from engine.ledger.access import open_writer

    ledger = demo_copy(tmp_path, targets={"db-18": {"state": "replicating", "checkpoint": "0/9A3F2C10"}})
    world = tmp_path / "world"
    assert not _loaded(world, "status", str(ledger))[0]
    assert not _loaded(world, "check", str(ledger))[0]
    code = "import engine.api, engine.langgraph, engine.cli.langgraph_cmds, engine.lease.rules, sys; print(sorted(m for m in sys.modules if m.startswith('langgraph')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT),
                          timeout=60).stdout.strip() == "[]"
    # A LangGraph thread holds the ledger and db-18 waits on its cutover: approving it says the
    # runtime resumes the thread itself, and still imports no langgraph here.
    writer = open_writer(str(ledger), actor="agent:handoff-x")
    leasing.acquire(writer.store, str(ledger), leasing.session_lease("handoff-x", user="t", planner="autopilot",
                                                                     runtime="langgraph"))

    def wait(l):
        t = l.targets["db-18"]
        t.state, t.awaiting, t.awaiting_by = "awaiting_approval", "cutover", "agent:handoff-x"

    writer.store.transact(lambda l: (wait(l), None)[1])
    assert not _loaded(world, "status", str(ledger))[0]
    imported, approved = _loaded(world, "approve", str(ledger), "db-18", "--yes", "--as", "alice")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "the LangGraph runtime resumes thread handoff-x when it sees this change" in approved.stderr
    assert not imported
    assert load(ledger)["targets"]["db-18"]["approvals"][0]["by"] == "alice"
