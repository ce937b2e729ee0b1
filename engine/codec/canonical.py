"""A new ledger document in canonical order and layout, and the read-back check every
text the engine writes goes through.

Canonical: the top-level keys in `TOP_ORDER` (unknown keys after them), `targets:`
with one flow line per target (wrapped at its commas when long), then the note and
`previous_note`. Used for a new ledger, and for a document whose entries cannot be
told apart (a flow mapping at the top); an existing document is otherwise changed in
place by `engine.codec.splice`.
"""

from __future__ import annotations

from engine.codec import emit, numbers, strict
from engine.codec.document import Parsed
from engine.codec.layout import GAP, TARGET, TOP
from engine.errors import LedgerInvalid

TOP_ORDER = (
    "task",
    "id",
    "owner_shift",
    "started",
    "environment",
    "revision",
    "paused",
    "session",
    "budget",
    "invariants",
    "approvers",
    "notify",
    "metrics",
    "redact",
    "runbook",
)
TAIL_ORDER = ("targets", "handoff_note", "handoff_note_by", "handoff_note_at", "previous_note")
ORDER = TOP_ORDER + TAIL_ORDER


def canonical(data: dict, header: str = "") -> Parsed:
    """A new document for `data`, in canonical order and layout."""
    blocks: list[list] = []
    if header.strip():
        blocks.append([GAP, None, header.rstrip("\n")])
    top = {k: data[k] for k in TOP_ORDER if k in data and data[k] is not None}
    for k, v in data.items():
        # An unknown key is written even when null: the engine never drops what a human wrote.
        if k not in top and k not in ORDER:
            top[k] = v
    for k, v in top.items():
        blocks.append([TOP, k, "\n".join(emit.block({k: v}))])
    targets = data.get("targets") or {}
    # An empty `targets:` would read back as null in any other YAML tool.
    blocks.append([TOP, "targets", "targets:" if targets else "targets: {}"])
    for name, target in targets.items():
        blocks.append([TARGET, name, "\n".join(emit.target_lines(name, target))])
    for k in TAIL_ORDER[1:]:
        if data.get(k) is not None:
            blocks.append([TOP, k, "\n".join(emit.block({k: data[k]}))])
    blocks.append([GAP, None, ""])  # the final newline
    return Parsed(data, blocks, split=True)


def emit_document(data: dict, header: str = "") -> tuple[str, dict[str, str]]:
    """Canonical text of a new ledger; returns (text, text per target). Raises
    ValueError if a part of it would read back as something else."""
    parsed = canonical(data, header)
    for kind, key, text in parsed.blocks:
        if kind == TOP and key != "targets":
            read_back(text, {key: data[key]})
    return parsed.text, parsed.lines


def read_back(text: str, expected: dict, depth: int = 0) -> None:
    """The engine must never write text it cannot read, or that reads as something else."""
    try:
        got = strict.load(text + "\n", "<emitted>", depth_offset=depth)
    except LedgerInvalid as err:
        raise ValueError(f"the engine produced YAML it cannot read back ({err}); nothing was written") from None
    if not numbers.same(got, expected):
        changed = sorted(str(k) for k in set(got or {}) | set(expected) if not numbers.same((got or {}).get(k), expected.get(k)))
        raise ValueError(f"the engine's YAML for {', '.join(changed)} would read back differently; nothing was written")
