"""A journal record as one line of plain terminal text (`handoff journal`, `resume --runtime temporal`)."""

from __future__ import annotations

from typing import Any

from engine.codec.textsafe import visible


def format_record(record: dict[str, Any]) -> str:
    """`[02:11:04] message`, every control character made visible."""
    ts = str(record.get("ts", ""))
    clock = ts[11:19] if len(ts) >= 19 else ts
    return visible(f"[{clock}] {record.get('msg', record.get('kind', ''))}")
