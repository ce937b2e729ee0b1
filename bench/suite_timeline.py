"""Where the suite's time goes: each test's start, end and CPU, per xdist worker.

A pytest plugin and its report. The plugin writes one JSON line when a test starts and one
when it ends, with the worker's CPU then (its own and its waited-for children's, `os.times`),
into DIR/timeline-WORKER.jsonl. Nothing is asserted and nothing is timed inside a test.

    rm -rf /tmp/suite-timeline
    PYTHONPATH=$PWD/bench HANDOFF_TIMELINE_DIR=/tmp/suite-timeline ./tests/run.sh -p suite_timeline
    python3 bench/suite_timeline.py /tmp/suite-timeline      # workers, groups, files, tests

The report says how long each worker was busy, each xdist group's serial span (the groups
run one test after another on one worker: tests/conftest.py), and the files and tests that
take the most CPU. Processes a test starts but does not wait for (servers, tmux) are not in
the CPU figures: compare their sum with `time`'s for the whole run.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import time

_DIR = os.environ.get("HANDOFF_TIMELINE_DIR", "/tmp/suite-timeline")
_out = None


def _write(event: str, nodeid: str) -> None:
    global _out
    if _out is None:
        os.makedirs(_DIR, exist_ok=True)
        _out = open(os.path.join(_DIR, f"timeline-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"), "a")
    _out.write(json.dumps({"ev": event, "id": nodeid, "t": time.time(), "cpu": sum(os.times()[:4])}) + "\n")
    _out.flush()


def pytest_runtest_logstart(nodeid, location) -> None:
    _write("start", nodeid)


def pytest_runtest_logfinish(nodeid, location) -> None:
    _write("end", nodeid)


def _rows(folder: str) -> list[tuple[str, str, float, float, float]]:
    """(worker, test id, start, end, CPU seconds) of every test that ended."""
    rows = []
    paths = sorted(glob.glob(os.path.join(folder, "timeline-*.jsonl")))
    if len(paths) > 1:  # xdist's controller hears every test's start and end too: the workers' files say it
        paths = [p for p in paths if not p.endswith("timeline-main.jsonl")]
    for path in paths:
        worker = os.path.basename(path)[len("timeline-"):-len(".jsonl")]
        started = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                event = json.loads(line)
                if event["ev"] == "start":
                    started[event["id"]] = event
                elif event["id"] in started:
                    begin = started.pop(event["id"])
                    rows.append((worker, event["id"], begin["t"], event["t"], event["cpu"] - begin["cpu"]))
    return rows


def report(folder: str, top: int) -> None:
    rows = _rows(folder)
    if not rows:
        raise SystemExit(f"no timeline in {folder}: run the suite with the plugin first (see this file's doc)")
    t0 = min(r[2] for r in rows)
    print(f"{len(rows)} tests, {max(r[3] for r in rows) - t0:.0f} s from the first start to the last end")
    for worker in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == worker]
        print(f"  {worker}: {len(mine)} tests, busy {sum(r[3] - r[2] for r in mine):.0f} s, "
              f"last end at {max(r[3] for r in mine) - t0:.0f} s, CPU {sum(r[4] for r in mine):.0f} s")
    groups: dict[str, list] = collections.defaultdict(list)
    for r in rows:
        group = re.search(r"@([a-z-]+)$", r[1])  # xdist puts a test's group after its id (a parameter may hold an @)
        groups[group.group(1) if group else "(none)"].append(r)
    print("xdist groups (serial on one worker):")
    for name, mine in sorted(groups.items(), key=lambda g: -sum(r[3] - r[2] for r in g[1])):
        print(f"  {name}: {len(mine)} tests, {sum(r[3] - r[2] for r in mine):.0f} s wall, {sum(r[4] for r in mine):.0f} s CPU, "
              f"from {min(r[2] for r in mine) - t0:.0f} to {max(r[3] for r in mine) - t0:.0f} s")
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        entry = by_file[r[1].split("::")[0]]
        entry[0] += r[3] - r[2]
        entry[1] += r[4]
    print(f"files by CPU (top {top}; wall, CPU):")
    for name, (wall, cpu) in sorted(by_file.items(), key=lambda f: -f[1][1])[:top]:
        print(f"  {wall:6.1f} {cpu:6.1f}  {name}")
    print(f"tests by CPU (top {top}; wall, CPU):")
    for r in sorted(rows, key=lambda r: -r[4])[:top]:
        print(f"  {r[3] - r[2]:6.1f} {r[4]:6.1f}  {r[1]}")
    print(f"in all: {sum(r[3] - r[2] for r in rows):.0f} s of test wall time, {sum(r[4] for r in rows):.0f} s CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=_DIR)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    report(args.folder, args.top)
