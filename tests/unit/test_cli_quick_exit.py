"""`handoff` as a program (engine.cli.main.run) leaves without the interpreter's teardown once
main() has returned, and a short command reads its ledger with the cyclic collector off from
its start (engine.store.bulk.off_until_read). Neither may change what a command prints, its
exit code, what an exit handler does, or leave the collector off in a process that goes on.
Each case is a real process: the exit and the collector are the whole process's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, RUNBOOK_LEDGER, cli_env, handoff

# main() replaced by one that prints without a newline (left in the buffer), registers an exit
# handler that writes a file, keeps an object whose finalizer writes to another (the
# interpreter's teardown frees it), and returns 3; then the program's entry point, as the console script and `-m` call it.
PROGRAM = """
import atexit, os, sys
from engine.cli import main as cli

class Teardown:
    # writes to a file opened now when it is freed (at teardown nothing may be looked up)
    def __init__(self, path, write=os.write):
        self.fd, self.write = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), write
    def __del__(self):
        self.write(self.fd, b"torn down")

def main():
    atexit.register(lambda: open(sys.argv[1], "w").write("handler ran"))
    cli.KEPT = Teardown(sys.argv[2])
    sys.stdout.write("printed, no newline")
    return 3

cli.main = main
{before}
sys.exit(cli.run())
"""


def _program(tmp_path: Path, before: str = "", stdout=subprocess.PIPE) -> tuple[subprocess.CompletedProcess, Path, Path]:
    handler, teardown = tmp_path / "handler", tmp_path / "teardown"
    env = cli_env()
    env.pop("PYTHONUNBUFFERED", None)  # what is printed stays in the buffer until the exit flushes it
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(before=before), str(handler), str(teardown)],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=60)
    return done, handler, teardown


def test_the_output_the_code_and_the_exit_handlers_survive_the_quick_exit(tmp_path: Path) -> None:
    done, handler, teardown = _program(tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "printed, no newline"  # flushed before the process ended
    assert handler.read_text() == "handler ran"  # registered while the command ran: it still runs
    assert teardown.read_text() == ""  # no teardown: the objects were not freed one by one


def test_a_handler_registered_before_the_program_keeps_the_usual_exit(tmp_path: Path) -> None:
    """An exit handler from before run() (coverage's, a sitecustomize's) would run after ours
    and be skipped: the usual exit, teardown and all."""
    early = tmp_path / "early"
    done, handler, teardown = _program(tmp_path, before=f"atexit.register(lambda: open({str(early)!r}, 'w').write('ran'))")
    assert done.returncode == 3 and done.stdout == "printed, no newline", done.stderr
    assert early.read_text() == "ran" and handler.read_text() == "handler ran"
    assert teardown.read_text() == "torn down"


def test_output_that_cannot_be_flushed_exits_as_python_does(tmp_path: Path) -> None:
    """stdout's reader gone before the last flush: the usual exit reports it (Python's 120),
    never a quick exit that would claim the output was written."""
    read, write = os.pipe()
    os.close(read)
    try:
        done, _, _ = _program(tmp_path, stdout=write)
    finally:
        os.close(write)
    assert done.returncode == 120, done.stderr
    assert "BrokenPipeError" in done.stderr


COLLECTOR = """
import gc, sys
from engine.store import bulk
from engine.cli.main import main

before = []  # collections made before the first read was over
gc.callbacks.append(lambda phase, info: phase == "start" and not bulk._done and before.append(info["generation"]))
try:
    code = main(sys.argv[1:])
except SystemExit as stop:  # a usage error
    code = stop.code
gc.callbacks.clear()
print(code, len(before), gc.isenabled(), int(gc.get_freeze_count() > 1000), file=sys.stderr)
"""


def _collector(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", COLLECTOR, *args], capture_output=True, text=True, cwd=ROOT,
                          env=cli_env(), timeout=60)
    return done.stderr.split("\n")[-2].split()


def test_status_reads_with_the_collector_off_from_its_start_then_on(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    code, collections, enabled, frozen = _collector("status", str(ledger), "--json")
    assert code == "0"
    assert collections == "0"  # none through the imports and the read
    assert enabled == "True" and frozen == "1"  # on again, what was alive frozen, as after any first read


def test_a_command_that_never_reads_leaves_the_collector_on(tmp_path: Path) -> None:
    """A usage error (no ledger named) ends before any read: main() turns the collector back on
    for a process that goes on (tests call main() in-process)."""
    code, _, enabled, frozen = _collector("status")
    assert code == "2" and enabled == "True" and frozen == "0"


def test_a_long_command_keeps_the_collector_on_from_its_start(tmp_path: Path) -> None:
    """`journal` (and resume, a worker, a server) may run long before or without a read: the
    collector is left as it is."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    assert handoff("note", ledger, "--set", "a note", "--as", "alice").returncode == 0  # a journal to print
    code, collections, enabled, _ = _collector("journal", str(ledger))
    assert code == "0" and int(collections) > 0 and enabled == "True"
