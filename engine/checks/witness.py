"""`redact:` patterns that would match the journal's witness fields.

The journal never masks its witness fields (engine.audit.journal_base.WITNESS_FIELDS): an
approval hash stored as `[REDACTED]` would never be found again, and a stale copy of the
ledger could then run an irreversible step twice. A pattern that matches one of them is
still a mistake (it masks the same text in every message, status line and page, so
people lose the hashes and names they check an approval by), so `check` calls it a
problem, placed at the pattern, with what to do.
"""

from __future__ import annotations

from engine.audit.redact import ledger_pattern
from engine.checks.finding import ERROR, Finding
from engine.checks.locate import Locator
from engine.ledger.model import Ledger

# One example of each witness shape the engine writes (engine.ledger.render.approval_hash,
# engine.session.steps' intent token, engine.codec.timefmt's times, a revision, a chain hash).
SHAPES = (
    ("an approval hash", "0123456789abcdef"),
    ("a chain hash", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ("an intent token", "6b0e9441-a0fe75/1a2b3c4d"),
    ("a time", "2026-12-01T09:32:42Z"),
    ("a revision", "1234"),
)


def _witnesses(ledger: Ledger) -> list[tuple[str, str]]:
    """The shapes above and this ledger's own witness values (targets, steps, approvals)."""
    out = list(SHAPES)
    out += [("a target name", name) for name in list(ledger.targets)[:1000]]
    out += [("a step name", step.name) for step in ledger.steps()]
    for target in list(ledger.targets.values())[:1000]:
        for approval in target.approvals:
            out += [("an approval hash", approval.hash), ("an approver", approval.by), ("a time", approval.at)]
    return out


def witness_patterns(ledger: Ledger, text: str | None, path: str) -> list[Finding]:
    """A problem for each `redact:` pattern that matches a witness value."""
    found = []
    samples = _witnesses(ledger)
    locator = Locator(text, path)
    for i, pattern in enumerate(ledger.redact):
        compiled = ledger_pattern(pattern)  # as the journal applies it; the model has checked it compiles
        hit = next(((what, value) for what, value in samples if compiled.search(value)), None)
        if hit is None:
            continue
        line, column = locator.value("redact", i)
        found.append(Finding(
            ERROR, f"redact pattern {pattern!r} would also mask {hit[0]} ({hit[1]!r}), which the journal keeps as "
                   "proof (it is never masked there, but every message, status line and page would lose it)",
            path, line, column, code="redact-witness",
            suggestion="narrow the pattern to the secret's own shape (a prefix such as `s3cr3t-`, a keyword before it)"))
    return found
