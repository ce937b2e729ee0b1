"""Keep secrets out of the journal: the ledger's `redact:` patterns plus common shapes."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable

DEFAULT_PATTERNS = (
    # NAME=value where NAME looks secret: PASSWORD=..., PGPASSWORD='...', api_key=...
    r"(?i)\b([A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY)[A-Z0-9_]*)\s*[=:]\s*['\"]?(?P<secret>[^\s'\"]+)",
    # URLs with credentials: postgresql://user:secret@host
    r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<secret>[^\s@/]+)@",
    # Bearer tokens and common vendor token shapes
    r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    r"\b(?P<secret>(?:sk|pk|rk)-[A-Za-z0-9_-]{16,})",
    r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,})",
    r"\b(?P<secret>xox[abposr]-[A-Za-z0-9-]{10,})",
    r"\b(?P<secret>AKIA[0-9A-Z]{16})\b",
    r"(?P<secret>-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)",
)
MASK = "[REDACTED]"


@lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...]) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p) for p in patterns)


class Redactor:
    """Replaces secrets in text; a pattern's `secret` group (or the whole match) is masked."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.patterns = _compile(tuple(DEFAULT_PATTERNS) + tuple(extra))

    def text(self, value: str) -> str:
        for pattern in self.patterns:
            value = pattern.sub(self._mask, value)
        return value

    @staticmethod
    def _mask(match: re.Match) -> str:
        if "secret" in match.re.groupindex and match.group("secret") is not None:
            start, end = match.span("secret")
            whole = match.group()
            offset = match.start()
            return whole[: start - offset] + MASK + whole[end - offset :]
        return MASK

    def value(self, value: Any) -> Any:
        """Redact strings anywhere inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value
