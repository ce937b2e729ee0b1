"""The record of the last engine write of a file ledger: `<ledger>.last-write.json`.

It holds the revision, the content hash, the target names, the runbook's step names,
the metric names and whether there was a budget. A file that no longer matches it was
edited by someone else; one that went backwards (a restored backup, an editor's stale
buffer, `git checkout`) or lost what the engine last wrote is refused until a human
says so, because an old file can hold an approval that was already used:

- fewer targets: `missing` (resolved with `handoff check --accept-removal`);
- a lower revision, or a lost runbook step, metric or budget: `rollback` (resolved
  with `handoff check --accept-rollback`).
"""

from __future__ import annotations

import json
import os

from engine.model import Ledger
from engine.store.atomic import atomic_write
from engine.store.sidecar import SidecarRefused, open_sidecar


def read_record(path: str, ledger: str) -> dict | None:
    """The record, or None (never written, unreadable or torn)."""
    try:
        fd = open_sidecar(path, os.O_RDONLY, ledger=ledger)
    except SidecarRefused:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read() or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(path: str, ledger_path: str, ledger: Ledger, key: str) -> None:
    """Record a write the engine just made (atomically; under the writers' lock)."""
    body = {
        "revision": ledger.revision,
        "hash": key,
        "names": list(ledger.targets),
        "steps": [s.name for s in ledger.steps()],
        "metrics": sorted(ledger.metrics),
        "budget": ledger.budget is not None,
    }
    atomic_write(path, json.dumps(body).encode("utf-8"), durable=False, sidecar_of=ledger_path)


def regressions(ledger: Ledger, record: dict) -> tuple[list[str], list[str]]:
    """(targets missing, rollback sentences) of `ledger` against the last engine write."""
    names = record.get("names") or []
    missing = [n for n in names if n not in ledger.targets]
    rollback: list[str] = []
    revision = record.get("revision")
    if isinstance(revision, int) and ledger.revision < revision:
        rollback.append(f"its revision is {ledger.revision}, lower than the engine's last write (revision {revision})")
    steps = {s.name for s in ledger.steps()}
    lost = [s for s in record.get("steps") or [] if s not in steps]
    if lost:
        rollback.append(f"runbook step{'s' if len(lost) > 1 else ''} {', '.join(lost)} the engine last wrote "
                        f"{'are' if len(lost) > 1 else 'is'} gone")
    lost = [m for m in record.get("metrics") or [] if m not in ledger.metrics]
    if lost:
        rollback.append(f"metric{'s' if len(lost) > 1 else ''} {', '.join(lost)} the engine last wrote "
                        f"{'are' if len(lost) > 1 else 'is'} gone")
    if record.get("budget") and ledger.budget is None:
        rollback.append("the budget the engine last wrote is gone")
    return missing, rollback
