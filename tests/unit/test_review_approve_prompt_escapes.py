"""Review (tui): `handoff approve` on a terminal prints the target's and the step's names raw.

`engine.cli.approve_cmd.show` builds its header line as f"{target}: {pending.step.name} (...) would
run:" without `visible()`. The argv lines below it are escaped, but the header is not, so an
escape sequence in a target name (batch: the names come from the ledger) or in a runbook step's
name reaches the approver's terminal. A later target's name can move the cursor up and rewrite an
earlier target's argument: the approver reads `--mode=dry-run` where `--drop-all-tables` will run,
types the step's name and the count, and approves it.

Goes in tests/unit/ (uses tests.conftest's cli_env, ROOT and read_pty).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, read_pty

ESC = "\x1b"
# db-02's name moves the cursor up three lines (onto db-01's last argument), erases that line,
# writes a harmless-looking argument there, and comes back: the terminal then shows db-01 as
# running `--mode=dry-run` while its argv really ends in `--drop-all-tables`.
LIAR = f"db-02{ESC}[3A\r{ESC}[2K    --mode=dry-run{ESC}[3B\rdb-02"


def _write(tmp_path: Path, targets: dict, step: str = "cutover") -> Path:
    data = {
        "task": "t",
        "targets": targets,
        "runbook": {"steps": [{"name": step, "from": "verified", "to": "done", "reversible": False,
                               "run": ["/usr/local/sbin/fleet-cutover", "--cluster={target}", "{mode}"]}]},
    }
    path = tmp_path / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _awaiting(step: str, mode: str) -> dict:
    return {"state": "awaiting_approval", "awaiting": step, "awaiting_by": "agent", "mode": mode}


def _on_a_terminal(args: list[str], tmp_path: Path, prompt: bytes) -> bytes:
    """Run `handoff ARGS` on a real pty until it asks `prompt`, answer wrongly, return all it wrote."""
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], stdin=child, stdout=child,
                            stderr=child, env=env, cwd=str(ROOT), close_fds=True)
    os.close(child)
    try:
        seen = read_pty(main, lambda s: prompt in s)
        os.write(main, b"no\n")
        assert proc.wait(30) == 1
        try:
            while True:
                chunk = os.read(main, 65536)
                if not chunk:
                    break
                seen += chunk
        except OSError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    return seen


def test_a_batch_never_writes_a_target_name_raw_to_the_approvers_terminal(tmp_path: Path) -> None:
    """`handoff approve --step cutover --targets 'db-*'` on a terminal: the names it prints come from
    the ledger and must reach the terminal escaped (as `handoff status` shows them), never as
    cursor movements that rewrite the command shown above them."""
    ledger = _write(tmp_path, {"db-01": _awaiting("cutover", "--drop-all-tables"),
                               LIAR: _awaiting("cutover", "--mode=dry-run")})
    before = ledger.read_bytes()
    seen = _on_a_terminal(["approve", str(ledger), "--step", "cutover", "--targets", "db-*", "--as", "alice"],
                          tmp_path, b"to approve it on these targets")
    assert b"--drop-all-tables" in seen  # the real argument was printed...
    # ...and then rubbed out: the raw cursor-up / erase-line from db-02's name reached the terminal.
    assert ESC.encode() + b"[3A" not in seen, f"a target name's escape sequence reached the terminal raw: {seen!r}"
    assert ESC.encode() + b"[2K" not in seen, f"a target name's escape sequence reached the terminal raw: {seen!r}"
    assert ledger.read_bytes() == before


def test_the_single_approve_prompt_never_writes_a_step_name_raw(tmp_path: Path) -> None:
    """`handoff approve LEDGER db-01` on a terminal: the runbook step's name (ledger text) is printed
    in the header line above the argv; an OSC 0 in it must not retitle the window, a CSI 2J must not
    clear the screen."""
    step = f"cutover{ESC}]0;pwned\x07{ESC}[2J"
    ledger = _write(tmp_path, {"db-01": _awaiting(step, "--drop-all-tables")}, step=step)
    before = ledger.read_bytes()
    seen = _on_a_terminal(["approve", str(ledger), "db-01", "--as", "alice"], tmp_path, b"to approve it")
    assert b"IRREVERSIBLE" in seen
    assert ESC.encode() + b"]0;pwned" not in seen, f"the step name's OSC 0 reached the terminal raw: {seen!r}"
    assert ESC.encode() + b"[2J" not in seen, f"the step name's CSI 2J reached the terminal raw: {seen!r}"
    assert ledger.read_bytes() == before
