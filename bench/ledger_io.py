"""In-process ledger I/O at 10,000 targets, side by side with the naive paths.

Prints, as ratios in one run:
- re-load of an engine-written ledger (fresh store: read, parse, validate) vs naive
  `yaml.load(CSafeLoader)` (goal: >= 10x faster) and vs `json.loads` of the same data
  (goal: within 3x); also the re-load after another writer changed one target (what a
  TUI does after every session write) and a cache hit on unchanged bytes;
- one target updated end to end (`transact`: lock, CAS, canonical write, fsync) vs a
  naive full `yaml.dump` of the same data (goal: >= 5x faster).

`--comments`: the same ledger with comments in it (`common.add_comments`): one above
every 50th target, one at the end of every 20th target's line, a few at the top.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import add_comments, median_time, row, write_engine_ledger  # noqa: E402

from engine.store.file import FileStore  # noqa: E402


def main(n: int = 10_000, runs: int = 7, comments: bool = False) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-io-")
    path = os.path.join(folder, "ledger.yaml")
    raw = write_engine_ledger(path, n)
    if comments:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(add_comments(raw.decode("utf-8")))
    FileStore(path).transact(lambda ledger: None)  # now truly engine-written (lock record too)
    raw = open(path, "rb").read()
    data = yaml.load(raw, Loader=yaml.CSafeLoader)
    blob = json.dumps(data)
    kept = raw.count(b"#") if comments else 0
    out = [f"ledger: {n} targets, {len(raw) / 1e6:.2f} MB, {kept} comments after the first write ({path})"]

    naive_load = median_time(lambda: yaml.load(open(path, "rb").read(), Loader=yaml.CSafeLoader), runs=3)
    json_load = median_time(lambda: json.loads(blob), runs)
    cold = median_time(lambda: FileStore(path).read(), runs)
    out.append(row("re-load, fresh store vs yaml.load", cold, naive_load, "<=0.1 (10x)", naive_load / cold >= 10))
    out.append(row("re-load, fresh store vs json.loads", cold, json_load, "<=3", cold / json_load <= 3))

    # A reader that already holds the previous version re-reads after one target changed.
    reader = FileStore(path)
    reader.read()
    writer = FileStore(path)
    counter = [0]

    def one_change():
        counter[0] += 1
        writer.transact(lambda l: setattr(l.targets["db-00002"], "next_action", f"step {counter[0]}"))

    warm = median_time(lambda: reader.read(), runs, setup=one_change)
    out.append(row("re-load after a 1-target change vs yaml.load", warm, naive_load, "<=0.1 (10x)", naive_load / warm >= 10))
    out.append(row("re-load after a 1-target change vs json.loads", warm, json_load, "<=3", warm / json_load <= 3))
    hit = median_time(lambda: reader.read(), runs)
    out.append(row("re-load, unchanged bytes (cache) vs json.loads", hit, json_load, "<=3", hit / json_load <= 3))

    naive_dump = median_time(lambda: yaml.dump(data, Dumper=yaml.CSafeDumper), runs=3)
    store = FileStore(path)
    store.read()
    transact = median_time(one_change, runs)
    out.append(row("1-target transact vs yaml.dump (CSafeDumper)", transact, naive_dump, "<=0.2 (5x)", naive_dump / transact >= 5))
    shutil.rmtree(folder)
    return out


if __name__ == "__main__":
    print("\n".join(main(comments="--comments" in sys.argv)))
