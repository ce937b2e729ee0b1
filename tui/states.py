"""How each target state looks: a symbol, the word and a style class (never colour alone).

The table, the summary and the detail screen all use this one mapping, so a
state reads the same everywhere. Runbook-declared states fall back to `•`.
Awaiting approval is a flag (`⚑`), never the pause sign: `⏸` belongs to a paused
ledger alone. `missing` is not a ledger state: it marks a target the engine last
wrote that the file no longer has.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.text import clean_line


@dataclass(frozen=True)
class StateLook:
    """Symbol, CSS-ish class suffix and sort rank of one state."""

    symbol: str
    tone: str
    rank: int


# Rank: what needs a human first (awaiting, failed, blocked), then what moves,
# then what waits, then what is finished.
LOOKS: dict[str, StateLook] = {
    "(missing)": StateLook("∅", "missing", 0),
    "awaiting_approval": StateLook("⚑", "awaiting", 0),
    "failed": StateLook("✗", "failed", 1),
    "blocked": StateLook("⊘", "blocked", 2),
    "in_progress": StateLook("⟳", "active", 3),
    "replicating": StateLook("⟳", "active", 4),
    "verified": StateLook("◆", "ready", 5),
    "checked": StateLook("◇", "ready", 6),
    "queued": StateLook("·", "queued", 7),
    "done": StateLook("✓", "done", 8),
}
OTHER = StateLook("•", "other", 6)

TONES: tuple[str, ...] = ("missing", "awaiting", "failed", "blocked", "active", "ready", "queued", "done", "other")
# Tones of targets that wait on a human: marked in the gutter, first under sort-by-state, `]` / `[` visit them.
ATTENTION: frozenset[str] = frozenset({"missing", "awaiting", "failed", "blocked"})
MISSING = "(missing)"  # a pseudo-state: parenthesised, so no runbook state can be mistaken for it
PAUSED_SYMBOL = "⏸"


def look(state: str) -> StateLook:
    """The look of `state`; unknown (runbook) states get a neutral one."""
    return LOOKS.get(state, OTHER)


def label(state: str) -> str:
    """`✓ done`, `⚑ awaiting_approval`, `∅ missing from file`: symbol and words (a runbook's
    own state name is ledger text: its control characters made visible)."""
    return f"{look(state).symbol} {'missing from file' if state == MISSING else clean_line(state)}"


def needs_human(state: str) -> bool:
    """Awaiting, failed, blocked or missing from the file."""
    return look(state).tone in ATTENTION
