"""Whole processes as an operator meets them, on an engine-written 10,000-target ledger:
`handoff status --json` and `handoff approve` (no terminal), with the parse cache and
without it (after a hand edit, on a new host), against a bare
`python3 -c 'import yaml; yaml.load(...)'` of the same file. Goal: each at most 0.5x
the bare process. All five run in rotation, the same number of times."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, cache_path, first_awaiting, interleaved, row, run_process, without_cache, write_engine_ledger  # noqa: E402

from engine.store.file import FileStore  # noqa: E402


def main(n: int = 10_000, runs: int = 5) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-cli-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")  # ours and the subprocesses' alike
    os.environ["XDG_STATE_HOME"] = os.path.join(folder, "state")  # high-water marks: a bench ledger is new each run
    path = os.path.join(folder, "ledger.yaml")
    write_engine_ledger(path, n)
    FileStore(path).transact(lambda ledger: None)
    pristine = open(path, "rb").read()
    record = open(path + ".last-write.json", "rb").read()  # the record of the last write goes back with the file
    cached = open(cache_path(path), "rb").read()
    target = first_awaiting(yaml.load(pristine, Loader=yaml.CSafeLoader))
    env = dict(os.environ, PYTHONPATH=ROOT)
    py = sys.executable

    def restore(cache: bool):
        def setup() -> None:
            for name, body in ((path, pristine), (path + ".last-write.json", record)):
                with open(name, "wb") as fh:
                    fh.write(body)
            if cache:
                with open(cache_path(path), "wb") as fh:
                    fh.write(cached)
            else:
                without_cache(path)
        return setup

    def cli(*args: str):
        return lambda: run_process([py, "-m", "engine.cli.main", *args], env=env, cwd=ROOT)

    bare = f"import yaml; yaml.load(open({path!r}), Loader=yaml.CSafeLoader)"
    t = interleaved({
        "bare": (lambda: run_process([py, "-c", bare], env=env), None),
        "status cached": (cli("status", path, "--json"), restore(True)),
        "status cold": (cli("status", path, "--json"), restore(False)),
        "approve cached": (cli("approve", path, target, "--as", "bench"), restore(True)),
        "approve cold": (cli("approve", path, target, "--as", "bench"), restore(False)),
    }, runs)
    shutil.rmtree(folder)
    return [
        row("process: handoff status --json, parse cache vs bare yaml.load", t["status cached"], t["bare"], 0.5),
        row("process: handoff status --json, no cache vs bare yaml.load", t["status cold"], t["bare"], 0.5),
        row("process: handoff approve, parse cache vs bare yaml.load", t["approve cached"], t["bare"], 0.5),
        row("process: handoff approve, no cache vs bare yaml.load", t["approve cold"], t["bare"], 0.5),
    ]


if __name__ == "__main__":
    print("\n".join(main()))
