"""Target detail (enter on a row): every field, what would run next, evidence, approvals, history.

The header (OPERATOR / READ-ONLY, environment, session) stays on top, as on the
main screen. "Would run next" is the exact argv the next step would run (the
awaited one for a target awaiting approval; `a` approves it from here). The
history comes from the journal through the app's history worker; the step's
output tail is in the journal's `step_end` record, shown verbatim but safe. The
view follows the live ledger.
"""

from __future__ import annotations

import shlex
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Label, Static

from engine.api import HandoffError
from tui.attention import next_shown, outside, outside_fields, reconcile_command
from tui.policy import verified_word
from tui.states import label
from tui.text import clean, clean_line, one_line
from tui.timefmt import short_time
from tui.widgets.argv_view import ArgvView
from tui.widgets.header import HeaderBar, HeaderInfo
from tui.widgets.keybar import KeyBar

FIELDS = ("checkpoint", "next_action", "last_action", "reason", "verified_at", "changed_at",
          "touched_at", "awaiting", "awaiting_by", "awaiting_since")


class HistoryLoaded(Message):
    """Journal records about the target shown, and the newest reading of its running
    `until` step (engine.api's `until_progress`), if one runs."""

    def __init__(self, records: list[dict[str, Any]], progress: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.records = records
        self.progress = progress


def describe_outside(name: str, target: Any, location: str) -> Text:
    """When and what a hand edit changed that no runbook step makes, and the way out."""
    mark = outside(target)
    text = Text(end="")
    if mark is None:
        return text
    text.append("⚠ CHANGED OUTSIDE THE ENGINE\n", style="bold")
    at = mark.get("at")
    text.append(f"  {'at':<13}", style="bold")
    text.append(clean_line(short_time(at) if isinstance(at, str) else at or "?") + "\n")
    text.append(f"  {'fields':<13}", style="bold")
    text.append(clean_line(outside_fields(mark)) + "\n")
    text.append("  Sessions stop on it (exit 3). Check the real system, then run:\n")
    text.append("    " + clean_line(reconcile_command(location, name)) + "\n")
    return text


def describe_target(name: str, target: Any, location: str = "", policy: str | None = None) -> Text:
    """Every field of `target` as safe text, unknown keys included."""
    text = Text(end="")
    text.append(clean_line(name), style="bold")
    text.append(f"   {label(target.state)}\n")
    text.append_text(describe_outside(name, target, location))
    for field in FIELDS:
        value = next_shown(name, target) if field == "next_action" else getattr(target, field, None)
        if value not in (None, ""):
            text.append(f"{field:<15}", style="bold")
            text.append(clean(short_time(value) if field.endswith(("_at", "_since")) else value) + "\n")
    if target.in_flight is not None:
        f = target.in_flight
        text.append(f"{'in flight':<15}", style="bold")
        pid = f", pid {f.pid}" if f.pid else ""  # noted once the step has run half a second (engine.session.steps)
        text.append(clean(f"{f.step} (session {f.session}{pid}, since {short_time(f.started_at)})") + "\n")
    extra = getattr(target, "model_extra", None) or {}
    for key, value in extra.items():
        text.append(f"{clean_line(key):<15}", style="bold")
        text.append(clean(value) + "\n")
    ev = target.evidence
    if ev is not None:
        text.append("\nEvidence of the last step\n", style="bold underline")
        for key in ("step", "exit_code", "duration", "at", "timed_out", "journal"):
            value = getattr(ev, key, None)
            if value is not None:
                text.append(f"  {key:<13}{clean(value)}\n")
    if policy:
        text.append(f"{'policy':<15}", style="bold")
        text.append(clean_line(policy) + "\n")
    if target.approvals:
        text.append("\nApprovals\n", style="bold underline")
        for a in target.approvals:
            used = f", used {short_time(a.used_at)}" if a.used_at else ", unused"
            text.append(clean(f"  {a.step}: {a.by} (login {a.user}) at {short_time(a.at)}{used}; {verified_word(a)}") + "\n")
            if a.comment:
                text.append(clean(f"    “{a.comment}”") + "\n")
    return text


def describe_history(records: list[dict[str, Any]]) -> Text:
    """Journal records (newest last), with argv, exit code and output tail of steps."""
    text = Text(end="")
    if not records:
        text.append("(no journal records about this target)", style="dim")
    for r in records:
        text.append(clean_line(short_time(r.get("ts"))) + " ", style="dim")
        text.append(clean_line(r.get("kind", "")) + " ", style="bold")
        text.append(clean_line(r.get("actor", "")) + ": ", style="dim")
        text.append(clean(r.get("msg", "")) + "\n")
        if r.get("argv"):
            text.append("    $ " + clean_line(shlex.join(str(a) for a in r["argv"])) + "\n")
        if r.get("exit_code") is not None:
            text.append(f"    exit {clean_line(r['exit_code'])}\n")
        if r.get("output_tail"):
            for line in clean(r["output_tail"]).splitlines()[-20:]:
                text.append("    │ " + line + "\n", style="dim")
    return text


class DetailScreen(Screen[None]):
    """One target, in full.

    | Key | Action | What it does |
    |---|---|---|
    | escape,q | close | Back to the table |
    | a | approve | Approve this target's awaiting step |
    | y | copy_name | Copy the target's name (OSC 52) |
    | Y | copy_command | Copy the command that would run next |
    | T | timeline | This target's journal over time, and its state at any revision |
    """

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="detail.close", key_display="esc"),
        Binding("a", "approve", "Approve", id="detail.approve"),
        Binding("y", "copy_name", "Copy name", id="detail.copy_name"),
        Binding("Y", "copy_command", "Copy command", id="detail.copy_command"),
        Binding("T", "timeline", "Timeline", id="detail.timeline"),
    ]

    def __init__(self, name: str, target: Any, info: HeaderInfo, next_command: Any = None, next_error: str | None = None) -> None:
        super().__init__()
        self.target_name = name
        self.target = target
        self.info = info
        self.next_command = next_command
        self.next_error = next_error

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="detail-header")
        with VerticalScroll(id="detail"):
            yield Label(one_line(f"Target {self.target_name}", style="bold"), classes="dialog-title")
            yield Label("Would run next", classes="section-title", id="next-title")
            yield Static(id="next-facts")
            yield ArgvView([], id="next-argv", classes="command")
            progress = Static(id="detail-progress")
            progress.display = False  # shown only while an `until` step runs (show_progress)
            yield progress
            yield Static(describe_target(self.target_name, self.target, self.info.path, self._policy()), id="detail-fields")
            yield Label("History (journal)", classes="section-title")
            yield Static(Text("loading…", style="dim"), id="detail-history")
        yield KeyBar()

    def _policy(self) -> str | None:
        """The awaited step's approval policy, as the engine words it (None: the default)."""
        ledger = getattr(getattr(self.app, "main", None), "ledger", None)
        if ledger is None or getattr(self.target, "state", "") != "awaiting_approval":
            return None
        try:
            return self.app.controller.approval_policy(ledger, self.target_name)
        except HandoffError as error:  # a template that cannot render: the policy line says so
            return f"(cannot be worked out: {error})"

    def on_mount(self) -> None:
        self.query_one(HeaderBar).show(self.info)
        self._show_next()
        self.query_one("#detail").focus()

    def offered(self, action: str) -> bool:
        """What the footer offers: approving only to an operator, on a target that awaits it."""
        if action == "approve":
            return not self.app.read_only and getattr(self.target, "state", "") == "awaiting_approval"
        return True

    def _show_next(self) -> None:
        facts = self.query_one("#next-facts", Static)
        argv = self.query_one("#next-argv", ArgvView)
        pending = self.next_command
        argv.display = pending is not None
        if pending is None:
            facts.update(Text(clean(self.next_error or "nothing: no runbook step runs from this state"), style="dim"))
            return
        text = Text(end="")
        text.append(clean_line(pending.step.name), style="bold")
        text.append("  IRREVERSIBLE" if pending.irreversible else "  reversible", style="bold" if pending.irreversible else "")
        if self.target.state == "awaiting_approval":
            text.append("  awaits your approval (a)")
        argv.set_argv(pending.argv)
        facts.update(text)

    def follow(self, target: Any, info: HeaderInfo, next_command: Any, next_error: str | None) -> None:
        """The live ledger moved: show the target (and header) as they are now."""
        self.target, self.info, self.next_command, self.next_error = target, info, next_command, next_error
        self.query_one(HeaderBar).show(info)
        self.query_one("#detail-fields", Static).update(describe_target(self.target_name, target, info.path, self._policy()))
        self._show_next()
        self.refresh_bindings()

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        self.query_one("#detail-history", Static).update(describe_history(message.records))
        if message.progress:
            self.show_progress(message.progress["text"])

    def show_progress(self, words: str) -> None:
        """The `until` step's newest reading, with the time elapsed and the deadline."""
        text = Text("until  ", style="bold", end="")
        text.append(clean_line(words))
        progress = self.query_one("#detail-progress", Static)
        progress.update(text)
        progress.display = True

    def add_records(self, records: list[dict[str, Any]]) -> None:
        """New journal records as they arrive: the newest reading of this target's `until` step."""
        readings = [r for r in records if r.get("kind") == "until_reading" and r.get("target") == self.target_name]
        if readings:
            self.show_progress(str(readings[-1].get("msg", "")))

    def action_approve(self) -> None:
        self.app.main.approve_from(self.target_name)

    def action_copy_name(self) -> None:
        self.app.main.copy_name(self.target_name)

    def action_copy_command(self) -> None:
        self.app.main.copy_command(self.target_name)

    def action_timeline(self) -> None:
        from tui.screens.timeline import TimelineScreen  # a DataTable: loaded when the timeline first opens

        self.app.push_screen(TimelineScreen(self.app.controller, self.target_name))

    def action_close(self) -> None:
        self.dismiss(None)
