"""The session log: the journal tailed live, with follow mode and scrollback.

Records arrive as batches from the app's journal worker; each becomes one line
"02:11:04 message" built as `Text` from cleaned strings, so a
command's output can never inject markup or escape sequences. A message that
still holds a runbook template (`run '{python}' '{ledger_dir}/sim.py'`, written
by an older session) is rendered with this ledger's folder; what cannot be
rendered here (the session's own interpreter) is said, not hidden.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.events import Resize
from textual.widgets import RichLog, Static

from tui.text import clean_line

KIND_STYLE = {
    "discrepancy": "bold reverse",
    "approval": "bold",
    "rejection": "bold",
    "pause": "bold",
    "note": "italic",
    "log": "",
    "metric": "dim",
    "step_start": "",
    "step_end": "",
}
MAX_LINES = 5000
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render_templates(msg: str, ledger_dir: str | None) -> tuple[str, list[str]]:
    """`msg` with `{ledger_dir}` filled in; returns it and the placeholders left as they were."""
    left: list[str] = []

    def one(match: re.Match) -> str:
        if match.group(1) == "ledger_dir" and ledger_dir:
            return ledger_dir
        left.append(match.group())
        return match.group()

    return _TEMPLATE.sub(one, msg), left


def format_record(record: dict[str, Any], ledger_dir: str | None = None) -> Text:
    """One journal record as one line of safe text."""
    ts = str(record.get("ts") or "")
    clock = ts[11:19] if len(ts) >= 19 else ts
    kind = str(record.get("kind") or "")
    line = Text(no_wrap=False, end="")
    line.append(f"{clock} ", style="dim")
    msg = str(record.get("msg") or kind)
    # Messages name their target and, for people's actions, who did it ("db-18: cutover
    # approved by alice"); the session's id would only crowd a narrow pane.
    target = record.get("target")
    if target and str(target) not in msg:
        line.append(f"{clean_line(target)} ", style="bold")
    if kind == "step_end" and record.get("exit_code") not in (None, 0):
        msg = f"{msg} (exit {record.get('exit_code')})"
    left: list[str] = []
    if kind == "page":  # the only records whose text quotes a command template
        msg, left = render_templates(msg, ledger_dir)
    line.append(clean_line(msg), style=KIND_STYLE.get(kind, ""))
    if left:
        line.append(f" (template; {', '.join(dict.fromkeys(left))} not known here)", style="dim")
    return line


class LogPane(RichLog):
    """Journal lines; follows the end unless follow mode is off."""

    def __init__(self, *, id: str | None = None, ledger_dir: str | None = None) -> None:
        # min_width: RichLog renders at least 78 cells wide by default, so a 30-column pane
        # would scroll sideways instead of wrapping.
        super().__init__(max_lines=MAX_LINES, wrap=True, min_width=1, markup=False, highlight=False, auto_scroll=True, id=id)
        self.lines_seen = 0
        # RichLog wraps a line once, at the width it had when written; keep the
        # records so a pane shown again (80x24 folds it) or resized wraps them anew.
        self._records: deque[dict[str, Any]] = deque(maxlen=MAX_LINES)
        self._wrapped_at = 0
        self.ledger_dir = ledger_dir

    @property
    def follow(self) -> bool:
        """Whether new lines scroll the pane to the end."""
        return self.auto_scroll

    @follow.setter
    def follow(self, value: bool) -> None:
        self.auto_scroll = value
        self.border_subtitle = "follow" if value else "paused (F follows)"
        if value:
            self.scroll_end(animate=False)

    def add_records(self, records: Iterable[dict[str, Any]]) -> None:
        """Append journal records."""
        for record in records:
            self._records.append(record)
            self.write(format_record(record, self.ledger_dir))
            self.lines_seen += 1

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if width and width != self._wrapped_at and self._records:
            self._wrapped_at = width
            self.clear()
            for record in self._records:
                self.write(format_record(record, self.ledger_dir))
        elif width:
            self._wrapped_at = width


class LogTail(Static):
    """The last two journal lines, under the table when the side pane is folded away (80x24)."""

    DEFAULT_CSS = """
    LogTail { height: 2; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None, ledger_dir: str | None = None) -> None:
        super().__init__(id=id)
        self.ledger_dir = ledger_dir
        self._last: deque[dict[str, Any]] = deque(maxlen=2)

    def on_mount(self) -> None:
        if not self._last:
            self.update(Text("(no journal lines yet; l shows the log pane)", style="dim"))

    def add_records(self, records: Iterable[dict[str, Any]]) -> None:
        """Keep the newest two and show them, one line each."""
        self._last.extend(records)
        lines = [format_record(r, self.ledger_dir) for r in self._last]
        for line in lines:
            line.no_wrap, line.overflow = True, "ellipsis"
        self.update(Text("\n", end="").join(lines) if lines else Text("(no journal lines yet)", style="dim"))
