"""Marking rows and approving one step on all of them (a mixin of `MainScreen`).

Space marks or unmarks the selected row (and moves down, so a run of rows is marked
key by key); `M` marks every shown target awaiting approval (again, when all of them
are marked: clears every mark); `:mark PATTERN` / `:unmark PATTERN` take the
comma-separated shell patterns `handoff approve --targets` takes. `A` opens the batch
dialog (`tui.screens.approve_batch`) only when every marked target awaits approval of
the same step; otherwise it names each one that does not, and why, and opens nothing.
The yes becomes one typed request (`tui.requests.ApproveBatch`) for the mutation worker.

Marks are view state, not ledger data: they survive re-readings of the file (a mark
goes only with its row), are cleared from the targets a batch approved, and are never
offered in read-only mode (their rows are `mutating` in the action table: they only
serve a batch approval).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.api import HandoffError, matching, untrusted_text
from tui.requests import ApproveBatch
from tui.screens.approve_batch import BatchApproveScreen, BatchItem, BatchResult
from tui.text import clean_line

if TYPE_CHECKING:
    from tui.host import AppHost
    from tui.widgets.target_table import TargetTable

AWAITING = "awaiting_approval"


class BatchActions:
    """Marks and the batch approval; see `tui.screens.action_table` for their keys."""

    app: AppHost
    ledger: Any
    table: TargetTable

    def _awaiting(self, names: list[str]) -> list[str]:
        ledger = self.ledger
        return [n for n in names if ledger is not None and n in ledger.targets and ledger.targets[n].state == AWAITING]

    def do_toggle_mark(self, arg: str = "") -> None:
        name = self.table.cursor_name
        if name is None:
            self.notify("No target selected.", severity="warning", markup=False)
            return
        self.table.set_marked([name], not self.table.is_marked(name))
        self.table.action_cursor_down()

    def do_mark(self, arg: str = "") -> None:
        """Mark the shown targets awaiting approval (that match `arg`'s patterns, when given)."""
        shown = self.table.visible_names()
        if arg:
            shown = matching(shown, arg)
            if not shown:
                self.notify(f"no shown target matches {clean_line(arg)!r}", severity="warning", markup=False)
                return
        names = self._awaiting(shown)
        left = len(shown) - len(names)
        if not names:
            self.notify("None of the shown targets awaits approval; nothing was marked.", severity="warning", markup=False)
            return
        if not arg and all(self.table.is_marked(n) for n in names):
            count = self.table.marked_count
            self.table.set_marked(self.table.marked_names(), False)
            self.notify(f"Cleared {count} mark(s).", timeout=3, markup=False)
            return
        self.table.set_marked(names, True)
        unmarked = f"; {left} shown target(s) not awaiting approval left unmarked" if left else ""
        self.notify(f"Marked {len(names)} target(s) awaiting approval{unmarked}; {self.table.marked_count} marked in all.",
                    timeout=3, markup=False)

    def do_unmark(self, arg: str = "") -> None:
        """Unmark the targets matching `arg` (shown or not), or every mark."""
        names = self.table.marked_names()
        if arg:
            names = matching(names, arg)
        changed = self.table.set_marked(names, False)
        self.notify(f"Unmarked {changed} target(s); {self.table.marked_count} still marked.", timeout=3, markup=False)

    def refusal(self, names: list[str]) -> tuple[str | None, list[BatchItem], str]:
        """(step, items, problems) for the marked `names`: every one must await approval of one step."""
        ledger = self.ledger
        problems: list[str] = []
        items: list[BatchItem] = []
        steps: dict[str, list[str]] = {}
        for name in names:
            target = ledger.targets.get(name)
            if target is None:
                problems.append(f"{clean_line(name)} is missing from the file")
                continue
            if target.state != AWAITING:
                problems.append(f"{clean_line(name)} is {clean_line(target.state)}, not awaiting approval")
                continue
            if target.changed_outside:  # the engine approves it for no one until it is reconciled
                problems.append(clean_line(untrusted_text(name, target, self.app.controller.location)))
                continue
            try:
                pending = self.app.controller.pending_command(ledger, name)
            except HandoffError as error:
                problems.append(f"{clean_line(name)}: {clean_line(error.message)}")
                continue
            steps.setdefault(pending.step.name, []).append(name)
            items.append(BatchItem(name, target, pending, self.app.controller.approval_policy(ledger, name)))
        if len(steps) > 1:
            problems.append("they await different steps: " + "; ".join(
                f"{clean_line(step)} ({', '.join(clean_line(n) for n in who)})" for step, who in steps.items()))
        step = next(iter(steps)) if len(steps) == 1 else None
        return step, items, "; ".join(problems)

    def do_approve_marked(self, arg: str = "") -> None:
        """Open the batch dialog on the marked targets; refuse at once, naming each, when they cannot be one batch."""
        if self.ledger is None:
            return
        names = self.table.marked_names()
        if not names:
            self.notify("No target is marked: space marks the selected one, M every shown target awaiting approval.",
                        severity="warning", markup=False)
            return
        step, items, problems = self.refusal(names)
        if problems or step is None:
            self.notify(f"Not one batch, nothing asked or approved: {problems}. Unmark them (space, :unmark NAME) "
                        "to approve the rest.", severity="error", timeout=10, markup=False)
            return
        ledger = self.ledger
        revision = ledger.revision

        def done(result: BatchResult | None) -> None:
            if result is not None:
                self.app.submit(ApproveBatch(revision, result.step, result.expect, result.comment, result.drift))

        self.app.push_screen(BatchApproveScreen(step, items, revision, environment=ledger.environment,
                                                comment=self.app.take_draft(ApproveBatch.verb, step) or ""), done)
