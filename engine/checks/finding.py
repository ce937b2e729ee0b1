"""One thing `handoff check` found, where it is, and what to do about it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from difflib import get_close_matches

ERROR = "error"  # a session would stop or stall on it: `check` exits 1, `resume` refuses
WARNING = "warning"  # worth fixing; a problem only with `check --strict`
NOTICE = "notice"  # said only with `check --strict`, never a problem: what the setup does not prove


@dataclass
class Finding:
    """`file:line:col: message; suggestion`, as compilers print them."""

    severity: str
    message: str
    file: str
    line: int | None = None
    column: int | None = None
    suggestion: str | None = None
    code: str = field(default="", compare=False)  # which check said it (for tests and de-duplication)

    @property
    def where(self) -> str:
        parts = [self.file] + [str(n) for n in (self.line, self.column) if n is not None]
        return ":".join(p for p in parts if p)

    def text(self) -> str:
        """The one-line form: place, message, then what to do."""
        body = self.message + (f"; {self.suggestion}" if self.suggestion else "")
        return f"{self.where}: {body}" if self.where else body

    def as_json(self) -> dict:
        """The shape of one entry of `check --json`'s `findings`."""
        data = asdict(self)
        data.pop("code")
        return data


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice a misspelt `word` most likely meant, or None when nothing is close."""
    pool = sorted({str(c) for c in choices if c is not None and str(c) != word})
    found = get_close_matches(str(word), pool, n=1, cutoff=0.6)
    if not found:
        # Case slips (`Checked`) and long names that differ by a few letters.
        lowered = {c.lower(): c for c in pool}
        found = get_close_matches(str(word).lower(), list(lowered), n=1, cutoff=0.6)
        found = [lowered[f] for f in found]
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str], *, what: str = "") -> str:
    """`did you mean "run"?`, or the list of valid choices when none is close."""
    pool = sorted({str(c) for c in choices})
    guess = closest(word, pool)
    if guess is not None:
        return f'did you mean "{guess}"?'
    shown = ", ".join(pool[:12]) + (", ..." if len(pool) > 12 else "")
    return f"valid {what or 'choices'}: {shown}" if pool else ""


def names(items: list[str], limit: int = 3) -> str:
    """`db-1, db-2, db-3 (and 37 more)`."""
    shown = ", ".join(items[:limit])
    return shown + (f" (and {len(items) - limit} more)" if len(items) > limit else "")
