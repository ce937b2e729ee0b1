"""`handoff check --explain`: the invariant forms the engine understands, and how it
reads the invariants of one ledger."""

from __future__ import annotations

import textwrap

from engine.ledger.invariants import FORMS, Invariant, parse
from engine.ledger.model import Ledger


def explain_forms() -> str:
    """Every form, as a sentence and as its structured equivalent, with what it does."""
    out = ["Invariants the engine understands (anything else is reported as unenforced, never ignored):", ""]
    for sentence, structured, what in FORMS:
        out += [f"  {sentence}", f"      or {structured}",
                textwrap.fill(what, 88, initial_indent="      ", subsequent_indent="      "), ""]
    out.append("Write each as one item of `invariants:`; `handoff check` says which it could not read.")
    return "\n".join(out)


def structured(inv: Invariant) -> str:
    """The structured form of an understood invariant (what the guard enforces)."""
    if inv.kind == "precondition":
        return f"{{require: {{step: {inv.step}, state: {inv.state}}}}}"
    if inv.kind == "max_touched":
        return f"{{max_touched: {inv.limit}}}"
    if inv.kind == "metric":
        unit = ', unit: "%"' if inv.percent else ""
        return f'{{pause_if: {{metric: {inv.metric}, op: "{inv.op}", value: {inv.value:g}{unit}}}}}'
    return f"not understood: {inv.problem}"


def explain_ledger(ledger: Ledger) -> str:
    """How each invariant of `ledger` reads."""
    if not ledger.invariants:
        return "This ledger has no invariants."
    lines = ["How this ledger's invariants read:"]
    for item in ledger.invariants:
        inv = parse(item)
        lines.append(f"  {inv.text}\n      -> {structured(inv)}")
    return "\n".join(lines)
