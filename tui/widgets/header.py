"""The header: who you are (OPERATOR / READ-ONLY), where (environment, task), and how things stand.

Line 1 is identity: the mode badge, the environment, the task and the shift.
Line 2 is status, item by item in priority order: broken/stale marker, session
(and `--allow-unenforced`), the invariant line, the awaiting count, tokens and
budget, runtime, path, revision. An item that does not fit is dropped whole,
with everything after it; a word is never cut. Line 3 shows only while the
ledger is paused: who paused it, when and why. All ledger text goes through
`tui.text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from tui.states import PAUSED_SYMBOL
from tui.text import clean_line
from tui.timefmt import ago, short_time

SEPARATOR = " · "


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
    allow_unenforced: bool = False
    budget: str = ""
    budget_used: float | None = None  # 0..1 from the live session's heartbeat
    tokens_used: int | None = None
    tokens_budget: int | None = None
    cost_usd: float | None = None
    runtime: float | None = None  # seconds the session has been running
    phase: str | None = None
    paused_by: str | None = None
    paused_why: str | None = None
    paused_at: str | None = None
    is_paused: bool = False
    revision: int = 0
    stale: str | None = None  # "file does not parse; showing the state of 12s ago"
    invariants: tuple[str, ...] | None = None  # (long, short, worst status, medium): widgets.invariants.summary
    awaiting: int = 0
    drifted: int = 0  # targets with a recorded checkpoint mismatch (sessions refuse them)
    stop_requested_by: str | None = None  # the session was asked to stop and has not ended yet
    seq: int = 0  # the reading (tui.messages.Snapshot.seq) these facts come from
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class Item:
    """One header item: its forms, longest first, and the component class that styles it.

    A `filler` (runtime, path, revision) only takes room the items before it leave
    once they have their longest forms."""

    forms: tuple[str, ...]
    tone: str = ""
    filler: bool = False


def is_dangerous(environment: str | None) -> bool:
    """Production-like environments get the danger colour (and production confirmations)."""
    return bool(environment) and str(environment).lower().startswith("prod")


def fit_items(items: list[Item], width: int) -> list[tuple[str, str]]:
    """(text, tone) of the items that fit in `width`, in priority order; never a cut word.

    First every item that is not a filler, in its shortest form, while they fit (the
    first that does not is dropped with all that follow); then each, in priority
    order, takes its longest form that still fits; then the fillers while they fit."""
    gap = cell_len(SEPARATOR)
    chosen: list[tuple[Item, str]] = []
    used = -gap
    core = [i for i in items if not i.filler]
    for item in core:
        shortest = item.forms[-1]
        if used + gap + cell_len(shortest) > width:
            break
        chosen.append((item, shortest))
        used += gap + cell_len(shortest)
    for n, (item, form) in enumerate(chosen):
        for longer in item.forms:
            extra = cell_len(longer) - cell_len(form)
            if extra <= width - used:
                chosen[n] = (item, longer)
                used += extra
                break
    if len(chosen) == len(core):
        for item in (i for i in items if i.filler):
            form = next((f for f in item.forms if used + gap + cell_len(f) <= width), None)
            if form is None:
                break
            chosen.append((item, form))
            used += gap + cell_len(form)
    return [(form, item.tone) for item, form in chosen]


def words_within(text: str, width: int) -> str:
    """`text` cut at a word boundary to fit `width` cells (with `…`), or '' if no word fits."""
    if cell_len(text) <= width:
        return text
    kept = ""
    for word in text.split(" "):
        candidate = f"{kept} {word}" if kept else word
        if cell_len(candidate) + 1 > width:
            break
        kept = candidate
    return f"{kept}…" if kept else ""


def _k(n: int) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def status_items(info: HeaderInfo) -> list[Item]:
    """Line 2, in priority order."""
    items: list[Item] = []
    if info.stale:
        items.append(Item((f"⚠ {info.stale}", "⚠ STALE"), "stale"))
    items.append(_session_item(info))
    if info.drifted:
        # Before the invariants: "3 invariants ok" must not be the news while a checkpoint disagrees.
        items.append(Item((f"≠ {info.drifted} drifted: reconcile first", f"≠ {info.drifted} drifted"), "error"))
    if info.invariants is not None:
        long, short, worst, medium = info.invariants
        items.append(Item((long, medium, short), {"violated": "error", "unenforced": "warning", "unknown": "warning"}.get(worst, "ok")))
    if info.awaiting:
        items.append(Item((f"⚑ {info.awaiting} awaiting approval", f"⚑ {info.awaiting} awaiting"), "awaiting"))
    budget = _budget_text(info)
    if budget:
        items.append(Item(budget))
    if info.runtime is not None and info.session_status == "live":
        items.append(Item((f"up {ago(info.runtime)}",), filler=True))
    items.append(Item((clean_line(info.path),), "muted", filler=True))
    items.append(Item((f"rev {info.revision}",), "muted", filler=True))
    return items


def _session_item(info: HeaderInfo) -> Item:
    status = info.session_status
    symbol = {"live": "●", "dead": "✗", "stale": "◌"}.get(status, "○")
    word = {"live": "running", "dead": "dead", "stale": "stale", "none": "idle"}.get(status, status)
    short = f"{symbol} session {word}"
    if info.stop_requested_by is not None and status == "live":
        # Said until the session really ends: the operator sees the stop was taken and is pending.
        short = f"{symbol} session stopping (asked by {clean_line(info.stop_requested_by)})"
    if info.allow_unenforced:
        short += " (--allow-unenforced)"
    details = []
    if info.session_holder:
        details.append(clean_line(info.session_holder))
    if info.heartbeat_age is not None and status != "none":
        details.append(f"heartbeat {ago(info.heartbeat_age)} ago")
    if status == "live" and info.phase:
        details.append(clean_line(info.phase))
    elif status in ("dead", "stale") and info.session_detail:
        details.append(clean_line(info.session_detail))
    forms = [SEPARATOR.join([short, *details[:n]]) for n in range(len(details), -1, -1)]
    tone = {"live": "live", "dead": "stale-session", "stale": "stale-session"}.get(status, "muted")
    return Item(tuple(forms), tone)


def _budget_text(info: HeaderInfo) -> tuple[str, ...]:
    """Tokens and budget: `tokens 41k/200k $0.84 · budget 42% of 12 steps`, then shorter forms."""
    tokens = ""
    if info.tokens_used is not None:
        tokens = f"tokens {_k(info.tokens_used)}" + (f"/{_k(info.tokens_budget)}" if info.tokens_budget else "")
        if info.cost_usd is not None:
            tokens += f" ${info.cost_usd:.2f}"
    used = ""
    if info.budget_used is not None and info.session_status == "live":
        used = f"budget {info.budget_used:.0%} used" + (f" of {clean_line(info.budget)}" if info.budget else "")
    elif info.budget:
        used = f"budget {clean_line(info.budget)}"
    forms = [SEPARATOR.join(p for p in (tokens, used) if p)]
    if tokens and used:
        forms.append(tokens)
    return tuple(f for f in forms if f)


class HeaderBar(Widget):
    """Two lines (three while paused), always visible; see the module docstring."""

    COMPONENT_CLASSES = {
        "header--operator", "header--readonly", "header--danger", "header--environment", "header--task",
        "header--muted", "header--live", "header--stale-session", "header--stale", "header--error",
        "header--warning", "header--ok", "header--awaiting", "header--paused",
    }
    DEFAULT_CSS = """
    HeaderBar { height: 2; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.info = HeaderInfo()

    def show(self, info: HeaderInfo) -> None:
        """Repaint from `info`."""
        self.info = info
        self.styles.height = 3 if info.is_paused else 2
        self.refresh()

    def _style(self, tone: str) -> Style:
        return self.get_component_rich_style(f"header--{tone}", partial=True) if tone else Style()

    def lines(self, width: int) -> list[Text]:
        """The header's lines for `width` cells (tests read them too)."""
        info = self.info
        out = [self._identity(info, width), self._status(info, width)]
        if info.is_paused:
            who = clean_line(info.paused_by) or "someone"
            why = clean_line(info.paused_why) or "no reason given"
            when = f" at {short_time(info.paused_at)}" if info.paused_at else ""
            head = f" {PAUSED_SYMBOL} PAUSED by {who}{when}: "
            text = Text(head + words_within(why, max(0, width - cell_len(head) - 1)), end="")
            text.stylize(self._style("paused"))
            text.pad_right(max(0, width - text.cell_len))
            text.stylize(self._style("paused"))
            out.append(text)
        return out

    def _identity(self, info: HeaderInfo, width: int) -> Text:
        text = Text(end="", no_wrap=True)
        if info.read_only:
            why = f" ({clean_line(info.read_only_reason)})" if info.read_only_reason else ""
            text.append(f" READ-ONLY{why} ", self._style("readonly"))
        else:
            text.append(f" OPERATOR: {clean_line(info.actor)} ", self._style("operator"))
        if info.environment:
            tone = "danger" if is_dangerous(info.environment) else "environment"
            text.append(" ")
            text.append(f" environment: {clean_line(info.environment)} ", self._style(tone))
        room = width - text.cell_len - 1
        task = words_within(clean_line(info.task), room)
        if task:
            text.append(" ")
            text.append(task, self._style("task"))
            room -= cell_len(task) + 1
        if info.owner_shift:
            shift = f"shift: {clean_line(info.owner_shift)}"
            if cell_len(shift) + 2 <= room:
                text.append(" " * (room - cell_len(shift) + 1))
                text.append(shift, self._style("muted"))
        return text

    def _status(self, info: HeaderInfo, width: int) -> Text:
        text = Text(end="", no_wrap=True)
        text.append(" ")
        for n, (form, tone) in enumerate(fit_items(status_items(info), width - 2)):
            if n:
                text.append(SEPARATOR, self._style("muted"))
            text.append(form, self._style(tone))
        return text

    def render(self) -> Text:
        lines = self.lines(self.size.width or 80)
        return Text("\n", end="").join(lines)
