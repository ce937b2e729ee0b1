"""What a Claude Code hook call needs of the ledger, without reading the whole ledger.

`handoff hook pre-tool-use` and `post-tool-use` run on every tool call. Most calls need
only: the target names and states, the runbook's steps (name, run, from, to,
reversible), whether the ledger is paused and by whom, the agent's `unknown_commands`
policy, the session lease and the `redact:` patterns a journal record is redacted
with. Those facts are taken from a Ledger the engine has validated, and kept in the
per-user cache folder (`$XDG_CACHE_HOME/handoff/`, private to the user, like the parse
cache) keyed by the hash of the ledger file's exact bytes. A hook call reads the file,
hashes it, and uses the facts only if they were made from those very bytes; anything
else (a hand edit, a new host, a corrupt or foreign cache) means the full read, which
then remembers the facts for the next call. The facts are never a second reading of
the YAML: a ledger that does not validate never gets any, so a hook on it fails closed.

This module imports no pydantic and nothing of the store: loading must stay cheap.
How it is used: `HookContext.facts` (engine.hooks.context).
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any, NamedTuple

from engine.host.digests import content_digest
from engine.host.files import read_capped
from engine.host.folders import cache_file, private

VERSION = 3  # 2: the ledger's `redact:` patterns; 3: the states on a line of their own, read when asked for
MAX_BYTES = 64 * 1024 * 1024  # the store's own limit is lower; a bigger file is the full path's to refuse


# NamedTuples, not dataclasses, here and along the hook's path: importing dataclasses (with
# inspect) and building each class cost a hook call 8-10 ms of its 67 (importtime and a profile).
class StepFacts(NamedTuple):
    """One runbook step as the hook sees it."""

    name: str
    run: tuple[str, ...] | None
    from_: str
    to: str
    reversible: bool


class HookFacts:
    """The facts of one exact ledger text (see the module docstring). The target states are
    decoded at their first use (`states`): most calls never need them, and at 100,000
    targets they are most of the stored facts."""

    __slots__ = ("key", "step_list", "paused", "unknown_commands", "session", "redact", "_states", "_stored_states")

    def __init__(self, key: str, step_list: tuple[StepFacts, ...], paused: dict[str, Any] | None,
                 unknown_commands: str, session: dict[str, Any] | None, redact: tuple[str, ...], *,
                 states: dict[str, str] | None = None, stored_states: bytes = b"") -> None:
        self.key = key
        self.step_list = step_list
        self.paused = paused  # {"by": ..., "why": ...} when paused
        self.unknown_commands = unknown_commands
        self.session = session  # the lease as the ledger holds it
        self.redact = redact  # the ledger's own `redact:` patterns, for the journal
        self._states = states
        self._stored_states = stored_states

    @property
    def states(self) -> dict[str, str]:
        """Target name -> state. Stored ones that do not decode (the file is written whole and
        private: only a broken disk or a forger makes that) raise ValueError; the caller then
        forgets these facts and reads the ledger itself (HookContext.drop_facts)."""
        if self._states is None:
            states = json.loads(self._stored_states)
            if not isinstance(states, dict):
                raise ValueError("the hook's stored facts hold no target states")
            self._states = states
        return self._states

    @property
    def targets(self) -> dict[str, str]:
        """Target name -> state (iterating gives the names, as `Ledger.targets` does)."""
        return self.states

    def steps(self) -> list[StepFacts]:
        return list(self.step_list)


def facts_path(real: str) -> str:
    """Where the facts of the ledger at real path `real` live."""
    return cache_file(real, ".hook.json")


def read_key(ledger_path: str) -> tuple[str, str] | None:
    """(real path, content hash) of the ledger file now; None if it cannot be read."""
    real = os.path.realpath(ledger_path)
    try:
        with os.fdopen(os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as fh:  # a FIFO: never waited on
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None  # the full read says what it is instead
            raw = read_capped(fh, MAX_BYTES)
    except OSError:
        return None
    return (real, content_digest(raw)) if len(raw) <= MAX_BYTES else None


def load(ledger_path: str) -> HookFacts | None:
    """The facts of the ledger's current bytes, or None (then read the ledger itself)."""
    key = read_key(ledger_path)
    if key is None:
        return None
    real, content = key
    path = facts_path(real)
    if not private(path) or not private(os.path.dirname(path), stat.S_ISDIR):
        return None
    try:
        with open(path, "rb") as fh:
            head, _, states = fh.read().partition(b"\n")
        doc = json.loads(head)
        if not isinstance(doc, dict) or doc.get("v") != VERSION or doc.get("path") != real or doc.get("key") != content:
            return None
        if not states.startswith(b"{") or not states.endswith(b"}\n"):
            return None  # cut short
        return build(content, doc["facts"], stored_states=states)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # only a cache: a bad one costs the full read, never an answer


def build(key: str, f: dict[str, Any], *, stored_states: bytes = b"") -> HookFacts:
    """HookFacts from their stored form (`of_ledger`), the states given or still stored."""
    steps = tuple(StepFacts(s["name"], tuple(s["run"]) if s["run"] is not None else None, s["from"], s["to"],
                            bool(s["reversible"])) for s in f["steps"])
    return HookFacts(key, steps, f["paused"], f["unknown_commands"], f["session"], tuple(str(p) for p in f["redact"]),
                     states=f["states"] if "states" in f else None, stored_states=stored_states)


def of_ledger(ledger: Any) -> dict[str, Any]:
    """The facts of a validated Ledger, as stored."""
    paused = ledger.paused
    return {
        "states": {name: t.state for name, t in dict.items(ledger.targets)},
        "steps": [{"name": s.name, "run": list(s.run) if s.run is not None else None, "from": s.from_, "to": s.to,
                   "reversible": bool(s.reversible)} for s in ledger.steps()],
        "paused": None if paused is None else {"by": paused.by, "why": paused.why},
        "unknown_commands": ledger.agent.unknown_commands if ledger.agent else "allow",
        "session": ledger.session.model_dump(mode="json") if ledger.session is not None else None,
        "redact": list(ledger.redact),
    }


def forget(ledger_path: str) -> None:
    """Remove the stored facts of the ledger at `ledger_path` (they proved bad)."""
    try:
        os.unlink(facts_path(os.path.realpath(ledger_path)))
    except OSError:
        pass  # gone already, or never there


def stored_key(ledger_path: str) -> str | None:
    """The content hash the stored facts were made from (their file's first bytes only)."""
    path = facts_path(os.path.realpath(ledger_path))
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return None
    match = re.match(rb'\{"v": %d, "key": "([0-9a-f]{32})"' % VERSION, head)
    return match.group(1).decode() if match else None


def remember(ledger_path: str, content: str, ledger: Any) -> None:
    """Keep the facts of `ledger`, validated from the bytes whose hash is `content`."""
    from engine.store.atomic import atomic_write

    real = os.path.realpath(ledger_path)
    path = facts_path(real)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if not private(os.path.dirname(path), stat.S_ISDIR) or (os.path.lexists(path) and not private(path)):
            return  # someone else's folder or file: put nothing there
        # The key first: `stored_key` reads only the head of the file. The states on the second line.
        known = of_ledger(ledger)
        states = known.pop("states")
        body = (json.dumps({"v": VERSION, "key": content, "path": real, "facts": known}, ensure_ascii=False) + "\n"
                + json.dumps(states, ensure_ascii=False) + "\n")
        atomic_write(path, body.encode("utf-8"), durable=False, sidecar_of=path)
        os.chmod(path, 0o600)
    except (OSError, UnicodeError, ValueError, TypeError):
        pass  # only a cache
