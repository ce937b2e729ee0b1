"""Never a traceback for a user's situation: a folder where a sidecar belongs, a read-only
mount under a dry run, a ledger with a duplicate, a huge number, a missing field or a
100 MB size, a missing PostgreSQL driver. Each is one line with what to do, the
documented exit code, and the ledger byte for byte as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, RUNBOOK_LEDGER, cli_env, handoff


def one_line(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize("suffix", [".lock", ".journal.jsonl"])
def test_a_folder_where_a_sidecar_belongs(fleet, suffix):
    """`.lock` or the journal path is a folder: exit 1, one line naming it; the ledger is unchanged
    (the journal case used to change the ledger, then print a traceback)."""
    Path(str(fleet) + suffix).mkdir()
    before = fleet.read_bytes()
    err = one_line(handoff("pause", fleet, "--reason", "x"), 1)
    assert f"{fleet}{suffix} is a folder" in err and "nothing was changed" in err
    assert fleet.read_bytes() == before


def test_a_dry_run_on_a_read_only_mount(tmp_path):
    """`resume --dry-run` cannot write its shadow copy on a read-only file system: exit 2, one line."""
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs ({made.stderr.strip()}): this test needs root")
    try:
        ledger = mount / "fleet.yaml"
        ledger.write_text(RUNBOOK_LEDGER)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        result = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--dry-run"],
                                capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=60)
        err = one_line(result, 2)
        assert "Read-only file system" in err and "--dry-run" in err
        assert ledger.read_text() == RUNBOOK_LEDGER and sorted(p.name for p in mount.iterdir()) == ["fleet.yaml"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


BAD = {
    "duplicate": ("task: t\ntargets:\n  1: {state: queued}\n  '1': {state: done}\n", ":4:3: duplicate key '1' (first at line 3)"),
    "huge number": ("task: t\nrevision: " + "9" * 5000 + "\ntargets:\n  a: {state: queued}\n", ":2:11: a number with 5000 digits"),
    "missing step field": ("task: t\nrunbook:\n  steps:\n    - name: s\n      from: queued\n      run: [echo]\ntargets:\n  a: {}\n",
                           ":4:7: `runbook.steps.0.to` is required"),
    "missing metric run": ("task: t\nmetrics:\n  lag:\n    description: x\ntargets:\n  a: {}\n", ":4:5: `metrics.lag.run` is required"),
    "missing in_flight step": ("task: t\ntargets:\n  a: {state: queued, in_flight: {pid: 3}}\n", ":3:33: `targets.a.in_flight.step` is required"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_errors_point_at_their_line_and_column(tmp_path, case):
    """Each bad ledger is reported at the line and column of the problem (not 1:1, not without a place)."""
    text, expected = BAD[case]
    ledger = tmp_path / "l.yaml"
    ledger.write_text(text)
    for args in (("check", ledger), ("pause", ledger, "--reason", "x")):
        err = one_line(handoff(*args), 2)
        assert f"{ledger}{expected}" in err, err
        assert "sys.set_int_max_str_digits" not in err
    assert ledger.read_text() == text


def test_a_100_mb_ledger_is_reported_with_its_real_size(tmp_path):
    """The size limit names the file's size, not the limit it read up to."""
    ledger = tmp_path / "big.yaml"
    with open(ledger, "wb") as fh:
        fh.write(b"task: t\ntargets:\n  a: {state: queued}\n")
        fh.truncate(100 * 1024 * 1024)  # sparse: 100 MiB without writing it
    err = one_line(handoff("status", ledger), 2)
    assert "is 100 MiB; ledgers over 64 MiB are refused" in err


def test_versions():
    """`handoff --version` and `handoff-tui --version` print the installed version."""
    from engine.version import version

    for module, name in (("engine.cli.main", "handoff"), ("tui.main", "handoff-tui")):
        result = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, env=cli_env(),
                                cwd=str(ROOT), timeout=60)
        assert result.returncode == 0 and result.stdout.strip() == f"{name} {version()}"
    assert version()[0].isdigit()


def test_exit_6_is_documented():
    """`handoff --help`, `handoff resume --help` and the README name exit 6."""
    for args in (("--help",), ("resume", "--help")):
        assert "6 a service the session needs" in " ".join(handoff(*args).stdout.split()).replace("6  a", "6 a")
    assert "6 a service the session needs" in " ".join((ROOT / "README.md").read_text().split())


NO_DRIVER = "import sys; sys.modules['psycopg'] = None; from {module} import main; sys.exit(main({argv!r}))"


@pytest.mark.parametrize("module", ["engine.cli.main", "tui.main"])
def test_a_postgresql_url_without_the_driver_names_the_extra(module):
    """No psycopg installed (hidden from this process): exit 2 and the extra to install, no traceback."""
    argv = ["status", "postgresql://127.0.0.1/test#fleet"] if module == "engine.cli.main" else ["postgresql://127.0.0.1/test#fleet"]
    code = NO_DRIVER.format(module=module, argv=argv)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=60)
    err = one_line(result, 2)
    assert "pip install 'handoff-tui[postgres]'" in err
    readme = (ROOT / "README.md").read_text()
    assert "handoff-tui[postgres]" in readme


def test_the_session_log_of_a_database_ledger_is_not_a_path_built_from_its_url(tmp_path):
    """TUI `s` on a PostgreSQL ledger: the log goes to the per-user state folder, not `postgresql:/...`."""
    from engine.api import session_log_path

    os.environ["XDG_STATE_HOME"] = str(tmp_path / "state")
    try:
        path = session_log_path("postgresql://app:pw@db-host/ops#pg16/fleet")
    finally:
        del os.environ["XDG_STATE_HOME"]
    assert path == str(tmp_path / "state" / "handoff" / "postgres-pg16_fleet.session.log")
    assert "pw" not in path and os.path.isdir(os.path.dirname(path))
