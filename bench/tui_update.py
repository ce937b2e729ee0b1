"""Latency from an external ledger write to the changed row on screen, at 10,000 targets.

    python3 bench/tui_update.py [--writes 15] [--targets 10000]

handoff-tui runs on a real pseudo-terminal (120x40). Another process (a writer
kept alive, so its start-up is not counted) changes the first target's
`next_action` to a new text (every character different from the last one:
Textual sends only the cells that changed; the first target that needs a human, which
the screen opens on) with the engine's `transact` and reports when the
transaction began and when it returned (the new file is in place). The
benchmark reads the terminal until that text is drawn: the row has been
repainted. No hook in the app is needed. Printed: medians from the write's
commit and from the transaction's start, and the transaction's own cost.
Goal (issue 4): under 250 ms median from the write to the row on screen.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tui_common import PtyApp, env_for_app, make_fleet, median, ms, tui_argv

WRITER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from engine.api import open_ledger
handle = open_ledger(sys.argv[1], actor="bench-writer")
targets = handle.load().targets
# The screen opens on the first target that needs a human: change that one, so it is on screen.
name = next((n for n, t in targets.items() if t.state in ("awaiting_approval", "failed", "blocked")), next(iter(targets)))
print(json.dumps({"name": name}), flush=True)
for line in sys.stdin:
    text = line.strip()
    def change(ledger, text=text):
        ledger.targets[name].next_action = text
    start = time.time()
    handle.store.transact(change)
    print(json.dumps({"start": start, "end": time.time()}), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=15)
    parser.add_argument("--targets", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tui-bench-") as tmp:
        ledger = make_fleet(os.path.join(tmp, "fleet"), args.targets)
        env = env_for_app(os.path.join(tmp, "state"))
        writer = subprocess.Popen([sys.executable, "-c", WRITER, ledger, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert writer.stdin and writer.stdout
        first = json.loads(writer.stdout.readline())["name"]
        app = PtyApp(tui_argv(ledger), env)
        from_commit: list[float] = []
        from_start: list[float] = []
        write_cost: list[float] = []
        try:
            app.read_until(first.encode())
            app.drain(3.0)  # start-up workers done, watcher armed
            for i in range(args.writes):
                # Textual sends only the cells that changed: every character differs from the last write's.
                text = "BCDEFGHJKLMNPQRSTUVWXYZ"[i % 23] * 16
                mark = len(app.buffer)
                writer.stdin.write(text + "\n")
                writer.stdin.flush()
                times = json.loads(writer.stdout.readline())
                app.read_until(text.encode(), timeout=30, start=mark)
                drawn = time.time()
                from_commit.append(drawn - times["end"])
                from_start.append(drawn - times["start"])
                write_cost.append(times["end"] - times["start"])
                app.drain(0.5)  # the change highlight and any follow-up repaint settle
        finally:
            app.close()
            writer.stdin.close()
            writer.wait(timeout=10)
        print(f"external write -> row repainted on a 120x40 pty, {args.targets:,} targets, {args.writes} writes")
        print(f"  from the write's commit (file in place)  median {ms(median(from_commit))}  "
              f"(min {ms(min(from_commit))}, max {ms(max(from_commit))})")
        print(f"  from the transaction's start             median {ms(median(from_start))}")
        print(f"  the writer's transaction itself          median {ms(median(write_cost))}")
        goal = median(from_commit) < 0.25
        print(f"  goal: under 250 ms median from the write -> {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
