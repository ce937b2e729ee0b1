"""Filling runbook templates: argv lists, placeholder by placeholder, never a shell.

`{target}`, `{checkpoint}`, `{ledger_dir}`, `{python}` and any scalar field of the
target are substituted inside each argument; a value stays inside the argument it
was put in, whatever characters it holds (`; rm -rf /`, `$(...)`, backticks).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys

from engine.errors import Refused
from engine.ledger.model import Step, Target
from engine.ledger.workdir import WorkingDir

SHORT = 16  # hex digits of an approval's hash people see (engine.ledger.render.approval_hash)
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fields_for(name: str, target: Target | None, *, ledger_dir: str, python: str | None = None) -> dict[str, str]:
    """The values a template may use for one target."""
    values: dict[str, str] = {}
    if target is not None:
        for key, value in target.model_dump(exclude_none=True).items():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                values[key] = str(value)
    values.update(
        target=name,
        checkpoint=(target.checkpoint if target is not None and target.checkpoint else ""),
        ledger_dir=ledger_dir,
        python=python or sys.executable,
    )
    return values


def step_fields(name: str, target: Target | None, step: Step, *, ledger_dir: str, python: str | None = None) -> dict[str, str]:
    """The values `step`'s command is rendered with: `fields_for`, with `{state}` the step's `from`
    state (the state it runs in: a target awaiting its approval shows and binds the command
    that will run, not one naming `awaiting_approval`)."""
    values = fields_for(name, target, ledger_dir=ledger_dir, python=python)
    values["state"] = step.from_
    return values


def render(template: list[str], values: dict[str, str], *, what: str = "command") -> list[str]:
    """Each argument with its placeholders filled. An unknown placeholder is refused."""

    def fill(arg: str) -> str:
        def one(match: re.Match) -> str:
            token = match.group()
            if token == "{{":
                return "{"
            if token == "}}":
                return "}"
            key = match.group(1)
            if key not in values:
                raise Refused(
                    f"the {what} {template!r} uses {{{key}}}, which this target does not have; "
                    f"known placeholders: {', '.join(sorted(values))}",
                    title="Unknown placeholder",
                )
            return values[key]

        return _PLACEHOLDER.sub(one, arg)

    return [fill(str(arg)) for arg in template]


def approval_digest(name: str, target: Target, step: Step, *, ledger_dir: str, python: str | None = None) -> str:
    """What an approval is bound to: everything that decides what the approved step does.

    The step's command for this target exactly as it will run (every value rendered in,
    `{ledger_dir}` and `{python}` too: a database ledger's is the working folder of the
    process, so its approval runs only from that folder), the folder a file ledger's step runs
    in (its real folder), its timeout, and the target's checkpoint. A file ledger's folder is
    bound whether or not the command names it: a script named
    relative to it (`link.py`), a copy of the ledger in another folder or a folder link
    switched to another release would otherwise run another folder's script under the same
    approval. `{state}` is the step's `from` state, the state it runs in. An irreversible
    step has no `until` and no retries (the runbook is refused otherwise), so nothing else
    changes what one approval lets happen. Every caller passes the `ledger_dir` (and
    `python`) the command is rendered with and run in.

    This is the whole sha256, which the approval's journal record keeps and the fence
    compares before a spawn; people see and type its first SHORT hex digits
    (`approval_hash`), which alone an agent writing the runbook could match with another
    command by trying ~2^32 of them."""
    values = step_fields(name, target, step, ledger_dir=ledger_dir, python=python)
    argv = render(step.run or [], values, what=f"step {step.name}")
    what = {"argv": argv, "timeout": step.timeout, "checkpoint": target.checkpoint or ""}
    if not isinstance(ledger_dir, WorkingDir):
        # A database ledger has no folder of its own: each process runs its steps where it was
        # started, so only a `{ledger_dir}` its command names (rendered above) binds one.
        what["cwd"] = str(ledger_dir)
    blob = json.dumps(what, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def approval_hash(name: str, target: Target, step: Step, *, ledger_dir: str, python: str | None = None) -> str:
    """What an approval shows and the ledger keeps: the first SHORT hex digits of `approval_digest`."""
    return approval_digest(name, target, step, ledger_dir=ledger_dir, python=python)[:SHORT]


def describe(argv: list[str]) -> str:
    """A readable one-line form of an argv (quoted like a shell would need, for people only)."""
    from engine.codec.textsafe import shell_word

    return " ".join(shell_word(a) for a in argv)


