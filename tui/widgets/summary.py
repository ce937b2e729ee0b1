"""The summary bar: counts per state in the article's words, and a progress bar.

"17 done · 1 replicating · 20 queued · 1 blocked · 1 failed", then the share
of targets done. Counts come from `Ledger.counts()` (the engine's order). While
rows are marked for a batch approval, "* 3 marked" follows the counts (bold, so
it reads in NO_COLOR too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.events import Resize
from textual.widgets import Label, ProgressBar

from tui.text import clean_line

if TYPE_CHECKING:
    from engine.api import Ledger

WIDE_ENOUGH_FOR_BAR = 100


def summary_text(counts: dict[str, int]) -> str:
    """`17 done · 1 replicating · 20 queued`: the article's summary line."""
    return " · ".join(f"{n} {clean_line(state)}" for state, n in counts.items() if n)


class SummaryBar(Horizontal):
    """Counts per state and progress (done / total)."""

    DEFAULT_CSS = """
    SummaryBar { height: auto; }
    SummaryBar #counts { width: 1fr; }
    SummaryBar ProgressBar { width: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # Made here, not looked up: `show` may run before they are mounted.
        self.counts = Label(id="counts")
        self.progress = ProgressBar(total=1, show_eta=False, id="progress")
        self._ledger: Ledger | None = None
        self._missing = 0
        self.marked = 0  # rows marked in the target table (view state, not the ledger's)
        self.seq = 0  # the reading (tui.messages.Snapshot.seq) the counts come from

    def compose(self) -> ComposeResult:
        yield self.counts
        yield self.progress

    def on_resize(self, event: Resize) -> None:
        # At 80 columns the counts need the row: the percentage stays, the bar goes.
        self.progress.display = event.size.width >= WIDE_ENOUGH_FOR_BAR
        if self._ledger is not None:
            self.show(self._ledger, self._missing, self.seq)

    def show_marked(self, count: int) -> None:
        """Say how many rows are marked (0: say nothing)."""
        if count != self.marked:
            self.marked = count
            if self._ledger is not None:
                self.show(self._ledger, self._missing, self.seq)

    def show(self, ledger: Ledger, missing: int = 0, seq: int = 0) -> None:
        """Repaint from `ledger` (of reading `seq`); `missing` targets the file lost are counted too (and not as done)."""
        self._ledger, self._missing, self.seq = ledger, missing, seq
        counts = ledger.counts()
        total = len(ledger.targets) + missing
        text = Text(summary_text(counts) or "no targets", end="")
        if missing:
            text.append(f" · {missing} missing from file", style="bold reverse")
        if self.marked:
            text.append(f" · * {self.marked} marked", style="bold")
        share = f" · {counts.get('done', 0) / max(total, 1):.0%} done"
        if not self.progress.display and text.cell_len + len(share) <= self.size.width - 2:
            text.append(share)  # narrow: the bar is folded away; the share done stays while it fits
        self.counts.update(text)
        self.progress.update(total=max(total, 1), progress=counts.get("done", 0))
