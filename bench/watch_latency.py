"""Watch latency on a 10,000-target ledger: from a change on disk (an atomic replace by
another writer) to the watch's event, and to a parsed ledger in hand.
Goals: event < 50 ms median; parsed 10k ledger < 150 ms median."""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_engine_ledger  # noqa: E402

from engine.store.file import FileStore  # noqa: E402


async def _measure(path: str, changes: int) -> tuple[list[float], list[float]]:
    store = FileStore(path, read_only=True)
    store.read()
    stop = asyncio.Event()
    written: list[float] = []
    to_event: list[float] = []
    to_parsed: list[float] = []
    raws: list[bytes] = []
    base = open(path, "rb").read()
    for i in range(changes):  # prepared up front: the write itself is one atomic replace
        raws.append(base.replace(b"db-00002: {state: ", f"db-00002: {{reason: r{i}, state: ".encode(), 1))

    # The raw event, as the watch's own watcher sees it (watchfiles on the folder).
    from watchfiles import awatch

    async def events():
        n = 0
        async for _ in awatch(os.path.dirname(path), debounce=50, step=10, stop_event=stop,
                              watch_filter=lambda c, p: os.path.basename(p) == "ledger.yaml", recursive=False):
            to_event.append(time.perf_counter() - written[-1])
            n += 1
            if n >= changes:
                return

    async def parsed():
        n = 0
        async for event in store.watch(stop):
            to_parsed.append(time.perf_counter() - written[-1])
            assert not isinstance(event, Exception), event
            n += 1
            if n >= changes:
                return

    def writer():
        time.sleep(0.5)
        for raw in raws:
            tmp = path + ".new"
            with open(tmp, "wb") as fh:
                fh.write(raw)
            written.append(time.perf_counter())
            os.replace(tmp, path)
            time.sleep(0.4)

    thread = threading.Thread(target=writer)
    tasks = [asyncio.create_task(events()), asyncio.create_task(parsed())]
    thread.start()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=changes * 2 + 10)
    stop.set()
    thread.join()
    return to_event, to_parsed


def main(n: int = 10_000, changes: int = 9) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-watch-")
    path = os.path.join(folder, "ledger.yaml")
    write_engine_ledger(path, n)
    to_event, to_parsed = asyncio.run(_measure(path, changes))
    shutil.rmtree(folder)
    e, p = statistics.median(to_event), statistics.median(to_parsed)
    return [
        f"{'watch: change on disk -> event (median of %d)' % changes:<48} {e * 1000:9.1f} ms  goal < 50 ms   {'met' if e < 0.05 else 'NOT MET'}",
        f"{'watch: change on disk -> parsed 10k ledger':<48} {p * 1000:9.1f} ms  goal < 150 ms  {'met' if p < 0.15 else 'NOT MET'}",
    ]


if __name__ == "__main__":
    print("\n".join(main()))
