"""The journal's hash chain, checked off the UI thread: a break is a banner, never silent.

Verifying reads the whole journal (engine.api `LedgerHandle.journal_breaks`), so it runs
in a thread worker: once when the screen opens, then on a timer every CHAIN_POLL seconds,
and then only if the journal changed since the last check (its end offset, size or
modification time moved; a PostgreSQL journal has no file to look at, so each tick verifies). A rewrite in the middle of the file changes its mtime even
when its size stays the same, so an edit is found on the next tick.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.css.query import NoMatches
from textual.message import Message

CHAIN_POLL = 30.0  # seconds between looks at the journal; a full verify only when it changed


class JournalChain(Message):
    """The chain's verdict: one line per break (empty: intact)."""

    def __init__(self, breaks: list[str]) -> None:
        super().__init__()
        self.breaks = breaks


class ChainCheck:
    """Mixed into the app: the chain worker and its banner."""

    _chain_seen: Any = None  # the journal's signature at the last full verify
    chain_checks = 0  # full verifies run (each reads the whole journal)

    def start_chain_checks(self) -> None:
        """Verify now, then look again every CHAIN_POLL seconds."""
        self.check_chain(force=True)
        self.set_interval(CHAIN_POLL, self.check_chain)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chain")
    def check_chain(self, force: bool = False) -> None:
        """Verify the chain if forced or the journal changed since the last verify."""
        signature = self.controller.journal_signature()
        if not force and signature is not None and signature == self._chain_seen:
            return
        breaks = self.controller.journal_breaks()
        self._chain_seen = signature
        self.chain_checks += 1
        self.post_message(JournalChain(breaks))

    def on_journal_chain(self, message: JournalChain) -> None:
        if self.main is None:
            return
        try:
            self.main.show_chain(message.breaks)
        except NoMatches:
            self.log.warning("a journal verdict arrived after the screen was gone")
