"""The header bar: mode (OPERATOR / READ-ONLY), environment, task, shift, path, session, pause.

Two lines (three while paused), always visible. The mode badge is reversed and coloured so it cannot
be missed; `environment: production` (or any `prod*`) gets the danger colour in
every theme. All ledger text goes through `tui.text`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Label

from tui.text import clean_line, one_line
from tui.timefmt import ago, short_time


@dataclass
class HeaderInfo:
    """What the header shows, already gathered from the ledger and the engine."""

    task: str = ""
    owner_shift: str | None = None
    path: str = ""
    environment: str | None = None
    read_only: bool = False
    read_only_reason: str | None = None
    actor: str = ""
    session_status: str = "none"
    session_holder: str = ""
    session_detail: str = ""
    heartbeat_age: float | None = None
    budget: str = ""
    budget_used: float | None = None  # 0..1 from the live session's heartbeat
    phase: str | None = None
    paused_by: str | None = None
    paused_why: str | None = None
    paused_at: str | None = None
    is_paused: bool = False
    revision: int = 0


def is_dangerous(environment: str | None) -> bool:
    """Production-like environments get the danger colour."""
    return bool(environment) and str(environment).lower().startswith("prod")


class HeaderBar(Widget):
    """Mode, environment, task and shift on line 1; session and path on line 2; pause on line 3."""

    DEFAULT_CSS = """
    HeaderBar { height: auto; }
    HeaderBar Horizontal { height: 1; }
    HeaderBar Label { padding: 0 1 0 0; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # Labels are made here, not looked up: `show` may run before they are mounted.
        self.labels = {name: Label(id=name) for name in ("mode", "environment", "task", "shift", "session", "path", "paused")}

    def compose(self) -> ComposeResult:
        with Horizontal(id="header-line1"):
            yield self.labels["mode"]
            yield self.labels["environment"]
            yield self.labels["task"]
            yield self.labels["shift"]
        with Horizontal(id="header-line2"):
            yield self.labels["session"]
            yield self.labels["path"]
        # Its own line, so "PAUSED by who: why" is never cut off at 80 columns.
        yield self.labels["paused"]

    def show(self, info: HeaderInfo) -> None:
        """Repaint from `info`."""
        mode = self.labels["mode"]
        if info.read_only:
            why = f" ({clean_line(info.read_only_reason)})" if info.read_only_reason else ""
            mode.update(Text(f" READ-ONLY{why} ", style="bold"))
        else:
            mode.update(Text(f" OPERATOR: {clean_line(info.actor)} ", style="bold"))
        mode.set_class(info.read_only, "-readonly")
        mode.set_class(not info.read_only, "-operator")

        env = self.labels["environment"]
        env.display = bool(info.environment)
        env.update(Text(f" environment: {clean_line(info.environment)} ", style="bold"))
        env.set_class(is_dangerous(info.environment), "-danger")

        self.labels["task"].update(one_line(info.task, style="bold"))
        shift = self.labels["shift"]
        shift.update(one_line(f"shift: {clean_line(info.owner_shift)}") if info.owner_shift else Text(""))

        session = self.labels["session"]
        session.update(self._session_text(info))
        session.set_class(info.session_status == "live", "-live")
        session.set_class(info.session_status in ("dead", "stale"), "-stale")

        paused = self.labels["paused"]
        paused.display = info.is_paused
        if info.is_paused:
            who = clean_line(info.paused_by) or "someone"
            why = clean_line(info.paused_why) or "no reason given"
            when = f" at {short_time(info.paused_at)}" if info.paused_at else ""
            paused.update(Text(f" ⏸ PAUSED by {who}{when}: {why} ", style="bold"))
        self.labels["path"].update(one_line(f"{info.path}  rev {info.revision}"))

    @staticmethod
    def _session_text(info: HeaderInfo) -> Text:
        status = info.session_status
        symbol = {"live": "●", "dead": "✗", "stale": "◌"}.get(status, "○")
        word = {"live": "running", "dead": "dead", "stale": "stale", "none": "idle"}.get(status, status)
        parts = [f"{symbol} session {word}"]
        if info.session_holder:
            parts.append(clean_line(info.session_holder))
        if info.heartbeat_age is not None and status != "none":
            parts.append(f"heartbeat {ago(info.heartbeat_age)} ago")
        if status == "live":
            # The engine's detail repeats holder and heartbeat; say the phase instead.
            if info.phase:
                parts.append(clean_line(info.phase))
        elif info.session_detail:
            parts.append(clean_line(info.session_detail))
        if info.budget_used is not None and status == "live":
            used = f"budget {info.budget_used:.0%} used"
            parts.append(f"{used} of {clean_line(info.budget)}" if info.budget else used)
        elif info.budget:
            parts.append(f"budget {clean_line(info.budget)}")
        return Text(" · ".join(parts), end="")
