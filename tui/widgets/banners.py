"""Loud, persistent banners for a ledger file that cannot be trusted as it stands.

- The file does not parse: where (file:line:col) and why; the state shown is the
  last good one, marked stale with its age. Stays until a read parses again. A file
  that is not there to read (deleted, a folder, a FIFO) is said as such (`broken_words`).
- The file lost targets the engine last wrote (truncated, a bad merge): how many
  and which, and the two ways out.
- The file went back (a lower revision, a runbook step, metric or budget gone).
- The journal's hash chain breaks (a record edited, removed or moved; tui.chain).

Each banner stays until the engine's next read says otherwise; none times out.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from engine.api import HandoffError, LedgerUnreadable
from tui.text import clean_line

LISTED = 8  # missing names spelled out; the rest are counted


class BrokenWords(NamedTuple):
    """What is wrong with the file, as the banner, the header and a refused key say it."""

    headline: str  # the banner's first words
    short: str     # the header's: "file does not parse"
    todo: str      # what to do first, for a refused key: a sentence
    until: str     # the banner's: nothing is written until ...


PARSE = BrokenWords("LEDGER DOES NOT PARSE", "file does not parse", "The file does not parse; fix it first",
                    "the file parses again")
GONE = BrokenWords("NO LEDGER FILE TO READ", "no ledger file to read", "There is no ledger file to read; put the "
                   "ledger file back first", "a ledger file is back at this path (restore it from your backup or "
                   "version control)")


def broken_words(error: HandoffError) -> BrokenWords:
    """A file that is not there to read (deleted, a folder, a FIFO) is not one to fix the syntax of."""
    return GONE if isinstance(error, LedgerUnreadable) else PARSE


def broken_text(error: HandoffError, age: str, revision: int | None) -> Text:
    """The invalid-file banner."""
    words = broken_words(error)
    text = Text(f"⚠ {words.headline}: ", style="bold", end="")
    text.append(clean_line(str(error)))
    rev = f" (revision {revision})" if revision is not None else ""
    text.append(f"\n  Showing the last good state{rev}, read {age} ago; nothing is written until {words.until}.")
    return text


def missing_text(names: list[str]) -> Text:
    """The shrink banner: how many and which targets the file lost, and the ways out."""
    shown = ", ".join(clean_line(n) for n in names[:LISTED])
    more = f" and {len(names) - LISTED} more" if len(names) > LISTED else ""
    text = Text(f"⚠ {len(names)} TARGET{'S' if len(names) != 1 else ''} MISSING FROM THE FILE: ", style="bold", end="")
    text.append(f"{shown}{more}")
    text.append("\n  Restore the file if it was cut short; if they were removed on purpose, "
                ":accept-removal (= handoff check --accept-removal). Nothing is written until then.")
    return text


def rollback_text(findings: list[str]) -> Text:
    """The rollback banner: what went backwards, and the ways out."""
    text = Text("⚠ THE FILE WENT BACKWARDS: ", style="bold", end="")
    text.append("; ".join(clean_line(f) for f in findings))
    text.append("\n  Restore the newer file, or if this older one is right, :accept-rollback (= handoff check --accept-rollback).")
    return text


def chain_text(breaks: list[str], location: str) -> Text:
    """The journal banner: the record of who did what was changed after it was written."""
    text = Text("⚠ THE JOURNAL WAS CHANGED: ", style="bold", end="")
    more = f" and {len(breaks) - LISTED} more" if len(breaks) > LISTED else ""
    text.append(f"{len(breaks)} break{'s' if len(breaks) != 1 else ''} in its hash chain: ")
    text.append("; ".join(clean_line(b) for b in breaks[:LISTED]) + more)
    text.append(f"\n  Who did what is not proven as it stands: see `handoff journal {clean_line(location)} --verify`, "
                "restore the journal from a copy if you have one, and find out who changed it.")
    return text


class Banners(Vertical):
    """Zero to four banners above the table."""

    DEFAULT_CSS = """
    Banners { height: auto; }
    Banners > Static { height: auto; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # Made here, not looked up: `show_*` may run before they are mounted.
        self.broken = Static(id="banner-broken", classes="banner")
        self.missing = Static(id="banner-missing", classes="banner")
        self.rollback = Static(id="banner-rollback", classes="banner")
        self.chain = Static(id="banner-chain", classes="banner")

    def compose(self) -> ComposeResult:
        for banner in (self.broken, self.missing, self.rollback, self.chain):
            banner.display = False
            yield banner

    def show_broken(self, text: Text | None) -> None:
        """The parse banner (None hides it)."""
        self._set(self.broken, text)

    def show_missing(self, names: list[str]) -> None:
        self._set(self.missing, missing_text(names) if names else None)

    def show_rollback(self, findings: list[str]) -> None:
        self._set(self.rollback, rollback_text(findings) if findings else None)

    def show_chain(self, breaks: list[str], location: str) -> None:
        """The journal banner (an empty list hides it: the chain verified intact)."""
        self._set(self.chain, chain_text(breaks, location) if breaks else None)

    @staticmethod
    def _set(banner: Static, text: Text | None) -> None:
        banner.display = text is not None
        if text is not None:
            banner.update(text)

    def texts(self) -> list[str]:
        """The banners shown, as plain text (tests read them)."""
        return [str(b.render()) for b in (self.broken, self.missing, self.rollback, self.chain) if b.display]
