"""In-process ledger I/O at 10,000 targets, side by side with the naive paths, one run.

The headline is the cold path: a fresh store re-loading an engine-written ledger with
no parse cache (after a hand edit, on a new host, in CI), against `yaml.load` with
libyaml (goal: at most 0.1x). The cached path (the parse cache the store keeps after
its own writes) is its own row. Against `json.loads` of the same data the ratios are
reported without a goal. Writes compare like with like: one target updated through
`transact` (lock, compare-and-swap, canonical write, fsync), cold (a fresh store, no
cache) and warm (a store that has read the ledger), against a full `yaml.dump` plus
the same atomic write (temp file, fsync, rename, fsync of the folder).

Every side gets the same number of runs, taken in rotation (bench.common.interleaved).

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
from common import add_comments, cache_path, interleaved, row, without_cache, write_engine_ledger  # noqa: E402

from engine.store.atomic import atomic_write  # noqa: E402
from engine.store.file import FileStore  # noqa: E402


def main(n: int = 10_000, runs: int = 7, comments: bool = False) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-io-")
    os.environ.setdefault("XDG_CACHE_HOME", os.path.join(folder, "cache"))  # keep any per-user cache in here
    os.environ.setdefault("XDG_STATE_HOME", os.path.join(folder, "state"))  # high-water marks: a bench ledger is new each run
    path = os.path.join(folder, "ledger.yaml")
    raw = write_engine_ledger(path, n)
    if comments:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(add_comments(raw.decode("utf-8")))
    FileStore(path).transact(lambda ledger: None)  # now truly engine-written: record of the write and parse cache
    raw = open(path, "rb").read()
    data = yaml.load(raw, Loader=yaml.CSafeLoader)
    blob = json.dumps(data)
    cached_copy = open(cache_path(path), "rb").read()
    kept = raw.count(b"#") if comments else 0
    out = [f"ledger: {n} targets, {len(raw) / 1e6:.2f} MB, {kept} comments after the first write; "
           f"{runs} runs of each side, in rotation"]

    def with_cache() -> None:
        with open(cache_path(path), "wb") as fh:
            fh.write(cached_copy)

    reads = interleaved({
        "yaml": (lambda: yaml.load(open(path, "rb").read(), Loader=yaml.CSafeLoader), None),
        "json": (lambda: json.loads(blob), None),
        "cold": (lambda: FileStore(path).read(), lambda: without_cache(path)),
        "cached": (lambda: FileStore(path).read(), with_cache),
    }, runs)
    out.append(row("re-load, fresh store, no cache vs yaml.load [headline]", reads["cold"], reads["yaml"], 0.1))
    out.append(row("re-load, fresh store, parse cache vs yaml.load", reads["cached"], reads["yaml"], 0.1))
    out.append(row("re-load, fresh store, no cache vs json.loads", reads["cold"], reads["json"]))
    out.append(row("re-load, fresh store, parse cache vs json.loads", reads["cached"], reads["json"]))

    # A reader that already holds the previous version re-reads after one target changed
    # (what the TUI does after every session write); and a re-read of unchanged bytes.
    reader = FileStore(path)
    reader.read()
    writer = FileStore(path)
    counter = [0]

    def one_change(store: FileStore) -> None:
        counter[0] += 1
        store.transact(lambda l: setattr(l.targets["db-00002"], "next_action", f"step {counter[0]}"))

    later = interleaved({
        "yaml": (lambda: yaml.load(open(path, "rb").read(), Loader=yaml.CSafeLoader), None),
        "json": (lambda: json.loads(blob), None),
        "changed": (lambda: reader.read(), lambda: one_change(writer)),
        "same": (lambda: reader.read(), None),
    }, runs)
    out.append(row("re-load after another writer changed 1 target vs yaml.load", later["changed"], later["yaml"], 0.1))
    out.append(row("re-load after a 1-target change vs json.loads", later["changed"], later["json"]))
    out.append(row("re-load of unchanged bytes vs json.loads", later["same"], later["json"]))

    naive_path = os.path.join(folder, "naive.yaml")
    warm_store = FileStore(path)
    warm_store.read()
    writes = interleaved({
        "naive": (lambda: atomic_write(naive_path, yaml.dump(data, Dumper=yaml.CSafeDumper).encode("utf-8")), None),
        "warm": (lambda: one_change(warm_store), None),
        "cold": (lambda: one_change(FileStore(path)), lambda: without_cache(path)),
    }, runs)
    out.append(row("1-target transact, warm store vs yaml.dump + atomic write", writes["warm"], writes["naive"], 0.2))
    out.append(row("1-target transact, cold store, no cache vs the same", writes["cold"], writes["naive"]))
    shutil.rmtree(folder)
    return out


if __name__ == "__main__":
    print("\n".join(main(comments="--comments" in sys.argv)))
