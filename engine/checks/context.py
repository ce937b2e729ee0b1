"""What every check reads (the ledger, where things are in its text) and how it reports."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from engine.checks.finding import Finding
from engine.checks.locate import Locator
from engine.ledger.model import Ledger, Target

# `{name}` in an argument; `{{` and `}}` are literal braces (engine.ledger.render fills the same).
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
STEP_VALUES = ("target", "checkpoint", "ledger_dir", "python", "state")  # every target has these
HOST_VALUES = ("ledger_dir", "python")  # all a metric or notify command gets
TEMPLATE_MARK = "TEMPLATE PLACEHOLDER"  # in every command `handoff init` writes, until replaced

# Commands that never print a number, so a step with `until` that runs one can never see its condition.
_SILENT = frozenset({"true", "false", ":", "sleep", "touch", "mkdir", "rm", "rmdir", "cp", "mv", "ln",
                     "chmod", "chown", "kill", "test", "[", "sync"})


@dataclass
class Context:
    """One analysis: the ledger, its text's places, and what was found so far."""

    ledger: Ledger
    locator: Locator
    path: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, severity: str, message: str, *keys, at_key: bool = False, suggestion: str | None = None,
            code: str = "") -> None:
        """Record a finding placed at `keys` (the key itself with `at_key`, else its value)."""
        line, column = (self.locator.key(*keys) if at_key else self.locator.value(*keys)) if keys else (None, None)
        self.findings.append(Finding(severity, message, self.path, line, column, suggestion or None, code))


def placeholders(argv: list[str] | None) -> list[str]:
    """The placeholder names an argv template uses, in order, each once."""
    seen: list[str] = []
    for arg in argv or []:
        for match in PLACEHOLDER.finditer(str(arg)):
            name = match.group(1)
            if name and name not in seen:
                seen.append(name)
    return seen


def has_value(target: Target, key: str) -> bool:
    """Does `target` have a plain value called `key` that a template can use?"""
    value = getattr(target, key, None) if key in type(target).model_fields else (target.__pydantic_extra__ or {}).get(key)
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def scalar_fields(target: Target) -> set[str]:
    """Every plain-valued field of `target` (what `{field}` may name for it)."""
    return {k for k, v in target.model_dump(exclude_none=True).items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}


def is_template_placeholder(argv: list[str] | None) -> bool:
    """Is this command still the one `handoff init` wrote, which only fails?"""
    return any(TEMPLATE_MARK in str(arg) for arg in argv or [])


def cannot_print_number(argv: list[str] | None) -> bool:
    """True when the command plainly never prints a number (`true`, `sleep 5`, `echo ok`).
    Anything else might, and only running it would tell."""
    if not argv:
        return False
    command = os.path.basename(str(argv[0]))
    if command in _SILENT:
        return True
    if command in ("echo", "printf"):
        words = [a for a in argv[1:] if not re.fullmatch(r"-[neE]+", a)]
        return not any(re.search(r"\d|\{", a) for a in words)
    return False
