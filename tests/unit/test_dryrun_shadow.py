"""The dry-run shadow `ledger.dryrun.yaml`: a planted symlink is refused (the file it names
is not overwritten), and the shadow takes the ledger's group and mode bits."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, cli_env

LEDGER = ("task: t\ntargets:\n  a: {state: queued}\nrunbook:\n  steps:\n"
          "    - {name: c, from: queued, to: checked, reversible: true, run: [\"true\"], check: [\"true\"]}\n")


def _dry(tmp_path: Path, ledger: Path, umask: int = 0o022) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--dry-run"],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT),
                          env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")), preexec_fn=lambda: os.umask(umask))


def test_a_planted_symlink_is_refused_and_its_victim_untouched(tmp_path):
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    victim = tmp_path / "precious.txt"
    victim.write_text("do not overwrite\n")
    os.symlink(victim, tmp_path / "ledger.dryrun.yaml")
    result = _dry(tmp_path, ledger)
    said = result.stdout + result.stderr
    assert result.returncode == 2, said
    assert "is a symlink" in said and "remove it" in said and "Traceback" not in said
    assert victim.read_text() == "do not overwrite\n" and ledger.read_text() == LEDGER
    assert os.path.islink(tmp_path / "ledger.dryrun.yaml")


def test_the_shadow_takes_the_ledgers_group_bits_in_a_group_folder(tmp_path):
    """A group-writable ledger (0660) dry-run under umask 077: the shadow is 0660 too, not 0600 (a second
    user of the group could not read or replace it)."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    os.chmod(ledger, 0o660)
    old = tmp_path / "ledger.dryrun.yaml"
    old.write_text(LEDGER)
    os.chmod(old, 0o600)  # left by an earlier dry run, before the fix
    result = _dry(tmp_path, ledger, umask=0o077)
    assert result.returncode == 0, result.stdout + result.stderr
    shadow = tmp_path / "ledger.dryrun.yaml"
    assert stat.S_IMODE(os.stat(shadow).st_mode) == 0o660
    assert os.stat(shadow).st_gid == os.stat(ledger).st_gid
    assert ledger.read_text() == LEDGER


def test_dry_runs_again_and_again_never_touch_the_real_ledgers_mark(fleet):
    """A ledger with an `id` (Temporal, LangGraph and signed approvals write one): two dry
    runs in a row both run, and the real ledger is then read without any rollback alarm
    (the shadow is a new ledger with a mark of its own, never the real one's)."""
    from tests.conftest import handoff

    text = fleet.read_text().replace("task: small-fleet\n", "task: small-fleet\nid: 6f1d3c9e-0000-4000-8000-00000000abcd\n")
    fleet.write_text(text)
    assert handoff("check", fleet).returncode in (0, 1)
    for _ in range(2):
        dry = handoff("resume", "--ledger", fleet, "--dry-run")
        assert "went back in time" not in dry.stdout + dry.stderr, dry.stdout + dry.stderr
    status = handoff("status", fleet)
    assert status.returncode == 0 and "went back in time" not in status.stdout + status.stderr, status.stdout + status.stderr
    assert fleet.read_text() == text  # a dry run never writes the real ledger
