"""Output that cannot be written (`> /dev/full`, a full disk or quota) is one line on stderr and
exit 1, never a traceback; a change the command made before it printed stays made, and the line
says where to look."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from session_kit import demo_copy

from tests.conftest import ROOT, cli_env

LOST = "handoff: could not write the output (No space left on device"


def to_full_disk(*args: str) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=cli_env(), cwd=str(ROOT), timeout=60)


def test_a_reading_command_whose_output_is_lost_says_so_in_one_line(tmp_path: Path) -> None:
    ledger = demo_copy(tmp_path)
    before = ledger.read_bytes()
    for args in (["status", str(ledger), "--json"], ["status", str(ledger)], ["note", str(ledger)]):
        result = to_full_disk(*args)
        assert result.returncode == 1 and result.stderr.startswith(LOST), (args, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert ledger.read_bytes() == before


def test_a_change_whose_confirmation_is_lost_is_still_made(tmp_path: Path) -> None:
    ledger = demo_copy(tmp_path)
    result = to_full_disk("pause", str(ledger), "--reason", "disk check", "--as", "alice")
    assert result.returncode == 1 and result.stderr.startswith(LOST), result.stderr
    assert "recorded all the same" in result.stderr and "Traceback" not in result.stderr
    assert yaml.safe_load(ledger.read_text("utf-8"))["paused"]
