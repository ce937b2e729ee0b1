"""A journal erased together with its index and the last-write record leaves a trace that
the next engine write does not wipe out. `handoff check` saw the erasure only while the
journal was empty (from the history journal beside it): the next write (any `handoff`
command that changes the ledger, the agent's own included) started a new chain, named its
head in a new last-write record, and from then on `check` said "ok" and `journal --verify`
"chain ok", the approvals, step starts and withdrawals of the erased records gone without
a word. The writer now sees the history journal hold writes older than the one it
journals into an empty journal, and notes a `chain_break` first.

Real processes (`handoff block`, `check`, `journal --verify`), `rm` as an agent would.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import cli_env, handoff, ok

LEDGER = """\
task: erase
owner_shift: test-oncall
targets:
  web-01: {state: queued}
  web-02: {state: queued}
"""
ERASED = (".journal.jsonl", ".journal.jsonl.index", ".last-write.json")


def _written(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The ledger after two engine writes (web-01 and web-02 blocked), and its commands' environment."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    ok(handoff("block", ledger, "web-01", "--reason", "one", env=env))
    ok(handoff("block", ledger, "web-02", "--reason", "two", env=env))
    return ledger, env


def _erase(ledger: Path) -> None:
    for suffix in ERASED:
        if os.path.exists(str(ledger) + suffix):
            os.unlink(str(ledger) + suffix)


def test_the_next_write_after_an_erasure_keeps_it_seen(tmp_path: Path) -> None:
    ledger, env = _written(tmp_path)
    ok(handoff("unblock", ledger, "web-02", "--to", "queued", "--reason", "three", env=env))
    _erase(ledger)
    before = handoff("check", ledger, env=env)
    assert before.returncode == 1 and "the journal was erased" in before.stdout, before.stdout + before.stderr

    ok(handoff("block", ledger, "web-02", "--reason", "four", env=env))  # the next write, by anyone

    checked = handoff("check", ledger, env=env)
    said = checked.stdout + checked.stderr
    assert checked.returncode == 1, said
    assert "journal chain broken" in said and "erased" in said, said
    verified = handoff("journal", ledger, "--verify", env=env)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert "erased" in verified.stdout + verified.stderr


def test_a_first_write_is_no_erasure(tmp_path: Path) -> None:
    """The control: a ledger's first writes (its history and journal both new) are intact."""
    ledger, env = _written(tmp_path)
    ok(handoff("journal", ledger, "--verify", env=env))
    assert "chain_break" not in Path(str(ledger) + ".journal.jsonl").read_text()


def test_a_line_of_no_revision_first_does_not_hide_the_erasure(tmp_path: Path) -> None:
    """A record that names no write (a log line, as hooks and sessions journal them) appended
    first into the erased journal: the next write still notes the erasure."""
    from engine.api import open_ledger

    ledger, env = _written(tmp_path)
    _erase(ledger)
    open_ledger(str(ledger), actor="agent").journal.append("log", "nothing to see", actor="agent")
    ok(handoff("unblock", ledger, "web-02", "--to", "queued", "--reason", "three", env=env))
    verified = handoff("journal", ledger, "--verify", env=env)
    assert verified.returncode == 1 and "erased" in verified.stdout + verified.stderr, verified.stdout + verified.stderr
