"""A journal record as one line of plain terminal text (`handoff journal`, `resume --runtime temporal`)."""

from __future__ import annotations

from typing import Any

from engine.codec.textsafe import one_line


def format_record(record: dict[str, Any]) -> str:
    """`[02:11:04] message`, one line (a newline in a reason is `⏎`, never a record of its own),
    every control character made visible."""
    ts = str(record.get("ts", ""))
    clock = ts[11:19] if len(ts) >= 19 else ts
    return one_line(f"[{clock}] {record.get('msg', record.get('kind', ''))}")
