"""The planner's brief against the full ledger: what a model turn reads, at 40 / 1,000 / 10,000 targets.

Each Claude turn starts from `engine.planners.brief.build` (never from the ledger's YAML or an old
transcript). This prints its size in tokens (characters / 4) beside the size of the
whole ledger as the engine writes it, and the ratio; the goal is a brief at most 2% of
the YAML at 10,000 targets. The brief is built as a session builds it: invariant
statuses evaluated, and a journal with more records since the last turn than it shows.
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import median_time, write_engine_ledger  # noqa: E402

SIZES = (40, 1_000, 10_000)
GOAL = 0.02


def _events(n: int) -> list[dict]:
    """Journal records like a busy session's: transitions, step ends, gates."""
    kinds = ("transition", "step_end", "gate", "proposal")
    return [{"ts": f"2026-09-10T02:{i % 60:02d}:00Z", "kind": kinds[i % 4],
             "msg": f"db-{i:05d}: check passed. ledger updated: db-{i:05d}.state = checked, checkpoint = 0/9A3F2C10"}
            for i in range(n)]


def main() -> list[str]:
    from engine.ledger.invariants import evaluate
    from engine.planners.brief import BriefContext, build
    from engine.store import open_store

    lines = ["brief for a planner turn vs the whole ledger YAML (tokens = characters / 4):"]
    with tempfile.TemporaryDirectory() as folder:
        for n in SIZES:
            path = os.path.join(folder, f"fleet-{n}.yaml")
            raw = write_engine_ledger(path, n)
            ledger = open_store(path).read()
            ctx = BriefContext(ledger_path=path, statuses=evaluate(ledger), events=_events(40),
                               budget="steps 3 of 12, 4.2 of 60 min; 12% used, the session hands off at 75%", free_slots=1)
            brief = build(ledger, ctx)
            seconds = median_time(lambda: build(ledger, ctx), runs=5)
            ratio = len(brief) / len(raw)
            goal = f"; goal <= {GOAL:.0%}: {'met' if ratio <= GOAL else 'NOT met'}" if n == SIZES[-1] else ""
            lines.append(f"  {n:>6,} targets: brief {len(brief) // 4:>6,} tokens, ledger YAML {len(raw) // 4:>8,} tokens, "
                         f"brief/YAML {ratio:.2%}, built in {seconds * 1000:.1f} ms{goal}")
    return lines


if __name__ == "__main__":
    for line in main():
        print(line, flush=True)
