"""Whole processes as an operator meets them, on an engine-written 10,000-target ledger:
`handoff status --json` and `handoff approve` vs a bare `python3 -c 'import yaml; yaml.load(...)'`
of the same file (goal: each at most 0.5x the bare process)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, first_awaiting, median_time, row, run_process, write_engine_ledger  # noqa: E402

from engine.store.file import FileStore  # noqa: E402


def main(n: int = 10_000, runs: int = 5) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-cli-")
    path = os.path.join(folder, "ledger.yaml")
    write_engine_ledger(path, n)
    FileStore(path).transact(lambda ledger: None)
    pristine = open(path, "rb").read()
    lock = open(path + ".lock", "rb").read()
    target = first_awaiting(yaml.load(pristine, Loader=yaml.CSafeLoader))
    env = dict(os.environ, PYTHONPATH=ROOT)
    py = sys.executable

    naive = median_time(lambda: run_process([py, "-c", f"import yaml; yaml.load(open({path!r}), Loader=yaml.CSafeLoader)"], env=env), runs)
    status = median_time(lambda: run_process([py, "-m", "engine.cli.main", "status", path, "--json"], env=env, cwd=ROOT), runs)

    def restore():
        with open(path, "wb") as fh:
            fh.write(pristine)
        with open(path + ".lock", "wb") as fh:
            fh.write(lock)

    approve = median_time(lambda: run_process([py, "-m", "engine.cli.main", "approve", path, target, "--as", "bench"], env=env, cwd=ROOT), runs, setup=restore)
    shutil.rmtree(folder)
    return [
        row("process: handoff status --json vs bare yaml.load", status, naive, "<=0.5", status / naive <= 0.5),
        row("process: handoff approve vs bare yaml.load", approve, naive, "<=0.5", approve / naive <= 0.5),
    ]


if __name__ == "__main__":
    print("\n".join(main()))
