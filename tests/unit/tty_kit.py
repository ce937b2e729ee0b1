"""Running `handoff` with its stdin on a real pseudo-terminal, as a person at a keyboard.

The answers are typed into the terminal's input before the process reads them; the
terminal's line discipline hands them over a line at a time, as a keyboard would.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from tests.conftest import ROOT, cli_env


def on_terminal(*args, typed: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    """`handoff ARGS` with stdin a terminal and `typed` already typed on it."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", *map(str, args)], stdin=slave,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=str(ROOT))
        os.write(master, typed.encode())
        out, err = proc.communicate(timeout=timeout)
    finally:
        os.close(slave)
        os.close(master)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
