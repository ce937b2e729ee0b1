"""`handoff check`'s analysis: everything in a ledger that would stop or stall a session.

    findings = analyse(ledger, text, "ledger.yaml")

Each finding has a severity (`error`: a session would stop or stall on it; `warning`:
worth fixing, a problem only with `--strict`), a message, `file:line:col` and a
suggestion (the closest key, state, step, event or invariant form; the valid
placeholders). Nothing is run: this reads the ledger only. `handoff resume` runs the
same analysis before it takes the lease (engine.checks.readiness).
"""

from engine.checks.analyse import analyse, source_text
from engine.checks.finding import ERROR, WARNING, Finding

__all__ = ["ERROR", "WARNING", "Finding", "analyse", "source_text"]
