"""The read-only commands a session runs: verify probes (checkpoints) and metrics.

A probe is the `verify` argv of a runbook step; what it prints on its last non-empty
line is the checkpoint. A metric is `metrics.NAME.run`; it prints a number, maybe with
`%`. Both are rendered per argument (never through a shell) and run in their own
process group with a timeout, like steps. Every step and probe the session starts
carries `HANDOFF_STEP_TOKEN` in its environment, so a later session can find a step
left running even if its pid never reached the ledger.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from engine.approvals.people import AGENT_VAR
from engine.audit.redact import Redactor
from engine.ledger.model import Ledger, Step
from engine.ledger.render import fields_for, render
from engine.session.runner import StepResult, parse_reading, run_step

PROBE_TIMEOUT = 30.0
TOKEN_VAR = "HANDOFF_STEP_TOKEN"


def step_env(token: str | None = None, holder: str | None = None) -> dict[str, str]:
    """The environment of a step, probe or metric: ours, plus the token that names its
    intent, plus `HANDOFF_AGENT=<holder>` (engine.approvals.people): a process the engine spawns
    runs for an agent, and the engine refuses it every people-only operation."""
    env = dict(os.environ)
    if token:
        env[TOKEN_VAR] = token
    # The holder: as given; else the session id a token starts with (`<sid>/<hex>`); else
    # whoever this process already runs for; else the engine itself. Never empty.
    env[AGENT_VAR] = holder or (token.split("/", 1)[0] if token else "") or env.get(AGENT_VAR) or "the engine"
    return env


def _holder(ledger: Ledger) -> str | None:
    return ledger.session.id if ledger.session is not None else None


def render_for(ledger: Ledger, name: str, template: list[str], ledger_dir: str, what: str) -> list[str]:
    """`template` filled for target `name` (placeholders per argument)."""
    values = fields_for(name, ledger.targets.get(name), ledger_dir=ledger_dir, python=sys.executable)
    return render(template, values, what=what)


@dataclass
class ProbeResult:
    """What a verify probe said: `value` is its last non-empty output line when it exited 0.
    `output` has secrets masked; `problem` says why a probe that exited 0 still failed."""

    argv: list[str]
    ok: bool
    value: str | None
    exit_code: int | None
    output: str
    problem: str | None = None

    def said(self) -> str:
        """What the probe said, for a discrepancy message."""
        if self.ok:
            return repr(self.value)
        if self.problem:
            return self.problem
        tail = self.output.strip().splitlines()[-1:] or ["no output"]
        code = "timed out" if self.exit_code is None else f"exit {self.exit_code}"
        return f"{code}: {tail[0][:200]}"


def run_probe(ledger: Ledger, name: str, step: Step, ledger_dir: str) -> ProbeResult:
    """Run `step.verify` for target `name`; ok only on exit 0 with non-empty output that
    holds no secret (a masked checkpoint would match the next masked reading: drift
    detection and the approval hash would be blind)."""
    argv = render_for(ledger, name, step.verify or [], ledger_dir, f"verify of step {step.name}")
    result = run_step(argv, timeout=step.timeout or PROBE_TIMEOUT, cwd=ledger_dir, env=step_env(holder=_holder(ledger)))
    return probe_result(result, Redactor(ledger.redact))


def probe_result(result: StepResult, redactor: Redactor) -> ProbeResult:
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    ok = result.ok and bool(lines)
    output = redactor.text(result.stdout)
    secret = redactor.find(result.stdout)
    if secret is not None:
        problem = (f"exit {result.exit_code}, but its output holds what looks like a secret ({secret}); "
                   "a checkpoint must never be one: make the probe print only the checkpoint")
        return ProbeResult(result.argv, False, None, result.exit_code, output, problem)
    return ProbeResult(result.argv, ok, lines[-1] if ok else None, result.exit_code, output)


def read_metric(ledger: Ledger, metric: str, ledger_dir: str) -> tuple[float, bool]:
    """Run `metrics.<metric>.run`; returns (value, is_percent) or raises ValueError saying why."""
    spec = ledger.metrics.get(metric)
    if spec is None:
        raise ValueError(f"no source: add metrics.{metric}.run to the ledger")
    values = {"ledger_dir": ledger_dir, "python": sys.executable}
    argv = render(spec.run, values, what=f"metric {metric}")
    result = run_step(argv, timeout=PROBE_TIMEOUT, cwd=ledger_dir, env=step_env(holder=_holder(ledger)))
    redactor = Redactor(ledger.redact)
    shown = redactor.text(" ".join(argv[-3:]))
    if not result.ok:
        tail = redactor.text(result.output_tail).strip().splitlines()[-1:] or ["no output"]
        code = "timed out" if result.timed_out else f"exit {result.exit_code}"
        raise ValueError(f"`{shown}` failed ({code}): {tail[0][:200]}")
    secret = redactor.find(result.stdout)
    if secret is not None:
        raise ValueError(f"`{shown}` printed what looks like a secret ({secret}); a metric must print only a number")
    return parse_reading(result.stdout)


def find_step_processes(token: str) -> list[int]:
    """Pids of live processes whose environment carries our intent token (Linux /proc)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue  # gone, or not ours to read
        if needle in env.split(b"\0"):
            found.append(int(entry))
    return found
