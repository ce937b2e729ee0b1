"""Time to first paint of handoff-tui at 40, 1,000 and 10,000 targets, and memory at 10,000,
each as a ratio to an empty Textual app started the same way, measured side by side.

    python3 bench/tui_startup.py [--runs 5]

Method (bench/tui_common.py): process start -> the first target's row arrives on a
real pseudo-terminal (120x40). The runs interleave (empty, 40, 1k, 10k, empty, ...)
so machine noise lands on every column alike; medians are printed.
Memory: VmRSS (and the peak, VmHWM) of each process 2 s after its first paint.
Goal (issue 4): first paint at 10,000 targets within 1.5x of the empty app.

Two more rows give the floor: the empty app after importing engine.api, and after that
import and a read of the 10,000-target ledger (bench/tui_empty_app.py --engine). What
handoff-tui spends beyond the second is its own screen; what the second spends beyond the
empty app, no screen can save.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from tui_common import EMPTY_MARKER, PtyApp, empty_argv, env_for_app, make_fleet, median, ms, tui_argv

SIZES = (40, 1_000, 10_000)
FIRST_ROW = b"db-00000"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tui-bench-") as tmp:
        env = env_for_app(os.path.join(tmp, "state"))
        ledgers = {n: make_fleet(os.path.join(tmp, f"fleet-{n}"), n) for n in SIZES}
        subjects = [("empty Textual app", empty_argv(), EMPTY_MARKER),
                    ("floor: + engine import", empty_argv("--engine"), EMPTY_MARKER),
                    (f"floor: + engine, read {SIZES[-1]:,}", empty_argv("--engine", ledgers[SIZES[-1]]), EMPTY_MARKER)] + [
            (f"handoff-tui, {n:,} targets", tui_argv(ledgers[n]), FIRST_ROW) for n in SIZES]
        times: dict[str, list[float]] = {name: [] for name, _, _ in subjects}
        memory: dict[str, tuple[int, int]] = {}
        for run in range(args.runs):
            for name, argv, marker in subjects:
                app = PtyApp(argv, env)
                try:
                    times[name].append(app.read_until(marker) - app.started)
                    if run == 0:
                        app.drain(2.0)  # let workers finish (invariants, lease, journal) before reading memory
                        memory[name] = app.memory_kib()
                finally:
                    app.close()
        base = median(times["empty Textual app"])
        base_rss = memory["empty Textual app"][0]
        print(f"first paint, process start -> first row on a 120x40 pty, median of {args.runs}")
        for name, _, _ in subjects:
            t = median(times[name])
            print(f"  {name:<32} {ms(t)}  ratio {t / base:5.2f}  (min {ms(min(times[name]))}, max {ms(max(times[name]))})")
        t10k = median(times[f"handoff-tui, {SIZES[-1]:,} targets"])
        print(f"  goal at 10,000 targets: ratio <= 1.50 -> {'met' if t10k / base <= 1.5 else 'NOT met'} ({t10k / base:.2f})")
        print("memory 2 s after first paint (VmRSS / peak VmHWM)")
        for name, _, _ in subjects:
            rss, hwm = memory[name]
            print(f"  {name:<32} {rss / 1024:7.1f} MiB / {hwm / 1024:7.1f} MiB  ratio {rss / base_rss:5.2f}")


if __name__ == "__main__":
    main()
