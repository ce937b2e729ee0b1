"""What the main screen's ledger-changing actions do (a mixin of `MainScreen`).

Each method is a row's `method` in `tui.screens.action_table`: `do_NAME(self, arg)`.
The read-only and broken-file refusals happen before any of them is called, once, in
`MainScreen.perform` (from the table's `mutating` flag); a method asks what it must (a
reason, a typed name, a confirmation in production) and hands a typed request
(`tui.requests`) to the app's mutation worker. Nothing here writes a file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.api import BASE_STATES, SUMMARY_ORDER, HandoffError, untrusted_text
from tui.asked import asked_now
from tui.requests import (
    AcceptRemoval,
    AcceptRollback,
    AckNote,
    Approve,
    Block,
    Pause,
    Reject,
    Request,
    RequestStop,
    Retry,
    StartSession,
    Unapprove,
    Unblock,
    Unpause,
)
from tui.screens.approve import ApproveResult, ApproveScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.reason import Reason, ReasonPrompt
from tui.text import clean_line
from tui.widgets.header import is_dangerous

if TYPE_CHECKING:
    from tui.host import AppHost
    from tui.widgets.target_table import TargetTable


class LedgerActions:
    """The main screen's actions that change the ledger; see `tui.screens.action_table` for their keys."""

    app: AppHost
    ledger: Any
    snapshot: Any
    table: TargetTable

    # -- helpers ---------------------------------------------------------------------

    def _revision(self) -> int | None:
        """The revision on screen: what the operator saw when they asked."""
        return self.ledger.revision if self.ledger is not None else None

    def _kept(self, kind: type[Request], name: str | None = None) -> str:
        """The reason a refused `kind` request on `name` left (tui.mutations.take_draft), or nothing."""
        return self.app.take_draft(kind.verb, name) or ""

    def _production(self) -> bool:
        return self.ledger is not None and is_dangerous(self.ledger.environment)

    def _selected(self, name: str | None = None, *, states: tuple[str, ...] = (), verb: str = "") -> str | None:
        """The target under the cursor (or `name`), if it is in one of `states` (when given)."""
        name = name if name is not None else self.table.cursor_name
        if name is None or self.ledger is None:
            self.notify("No target selected.", severity="warning", markup=False)
            return None
        target = self.ledger.targets.get(name)
        if target is None:
            self.notify(f"{clean_line(name)} is missing from the file: restore the file, or :accept-removal.",
                        severity="warning", markup=False)
            return None
        if states and target.state not in states:
            self.notify(f"{clean_line(name)} is {target.state}; only {' or '.join(states)} targets can be {verb}.",
                        severity="warning", markup=False)
            return None
        return name

    # -- approve, reject -------------------------------------------------------------

    def do_approve(self, arg: str = "") -> None:
        self.approve_target(arg or None)

    def approve_target(self, name: str | None) -> None:
        """Open the approval dialog for `name` (or the cursor's target); never approves by itself."""
        if self.ledger is None:
            return
        name = self._selected(name, states=("awaiting_approval",), verb="approved")
        if name is None:
            return
        ledger = self.ledger
        if self._outside(name):
            return
        try:
            pending = self.app.controller.pending_command(ledger, name)
        except HandoffError as error:
            self.app.show_error(error)
            return
        invariants = self.snapshot.invariants if self.snapshot else []

        def done(result: ApproveResult | None) -> None:
            if result is not None:
                self.app.submit(Approve(self._revision(), name, result.step, result.comment, result.expect_hash,
                                        result.expect_drift))

        self.app.push_screen(ApproveScreen(name, ledger.targets[name], pending, invariants, len(ledger.invariants),
                                           environment=ledger.environment,
                                           policy=self.app.controller.approval_policy(ledger, name),
                                           comment=self._kept(Approve, name)), done)

    def _outside(self, name: str) -> bool:
        """A target changed outside the engine is approved by no one until reconciled (the engine
        refuses it): say so now, with the engine's reason, and ask nothing."""
        target = self.ledger.targets[name]
        if not target.changed_outside:
            return False
        self.notify(f"{untrusted_text(name, target, self.app.controller.location)}; nothing was approved",
                    severity="error", timeout=10, markup=False)
        return True

    def do_unapprove(self, arg: str = "") -> None:
        if self.ledger is None:
            return
        name = self._selected()
        if name is None:
            return
        if not any(not a.used_at for a in self.ledger.targets[name].approvals):
            self.notify(f"{clean_line(name)} holds no unused approval to withdraw.", severity="warning", markup=False)
            return
        self.app.submit(Unapprove(self._revision(), name))

    def do_reject(self, arg: str = "") -> None:
        name = self._selected(arg or None, states=("awaiting_approval",), verb="rejected")
        if name is None:
            return
        # Bound to what the prompt shows: this step and its hash (tui.requests.Reject).
        asked, revision = asked_now(self.app.controller, self.ledger, name), self._revision()

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.submit(Reject(revision, name, reason.text, asked))

        step = asked.step if asked is not None and asked.step else "the awaited step"
        self.app.push_screen(ReasonPrompt(f"Reject {step} on {name}", "The target will be blocked with your reason.",
                                          ok_label="Reject", danger=True, value=self._kept(Reject, name)), done)

    # -- the note ---------------------------------------------------------------------

    def do_edit_note(self, arg: str = "") -> None:
        if self.ledger is None:
            return
        self.app.edit_note_or_draft(self.ledger.handoff_note or "")

    def do_ack_note(self, arg: str = "") -> None:
        self.app.submit(AckNote(self._revision()))

    # -- pause, retry, block ------------------------------------------------------------

    def do_pause(self, arg: str = "") -> None:
        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.submit(Pause(self._revision(), reason.text))

        where = " (environment: production)" if self._production() else ""
        self.app.push_screen(ReasonPrompt(f"Pause the ledger{where}", "Sessions stop before their next step until unpaused.",
                                          ok_label="Pause", danger=self._production(), value=self._kept(Pause)), done)

    def do_unpause(self, arg: str = "") -> None:
        if self.ledger is None or self.ledger.paused is None:
            return
        paused = self.ledger.paused
        where = " (environment: production)" if self._production() else ""

        def done(yes: bool | None) -> None:
            if yes:
                self.app.submit(Unpause(self._revision()))

        # As deliberate as pausing: say who paused it and why, and ask.
        self.app.push_screen(ConfirmScreen(
            f"Unpause the ledger{where}?",
            f"Paused by {paused.by or 'someone'}: {paused.why or 'no reason given'}.\n{self._after_unpause()}",
            yes="Unpause", no="Stay paused", danger=self._production()), done)

    def _after_unpause(self) -> str:
        """What unpausing will really do: a pause ends sessions, so usually nothing until one is started."""
        lease = getattr(self.snapshot, "lease", None) if self.snapshot is not None else None
        if getattr(lease, "status", None) == "live":
            return "The running session goes on with its next step."
        return (f"No session is running: nothing runs until one is started (s here, or handoff resume "
                f"{self.app.controller.location}).")

    def do_retry(self, arg: str = "") -> None:
        name = self._selected(states=("failed",), verb="retried")
        if name is None:
            return
        if not self._production():
            self.app.submit(Retry(self._revision(), name))
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.submit(Retry(self._revision(), name, reason=reason.text))

        self.app.push_screen(ReasonPrompt(f"Retry {name} in production?",
                                          "It goes back to the state its failed step started from, and the next "
                                          "session runs that step again. Say why (this goes to the journal).",
                                          ok_label="Retry", danger=True, value=self._kept(Retry, name)), done)

    def do_block(self, arg: str = "") -> None:
        name = self._selected()
        if name is None:
            return

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.submit(Block(self._revision(), name, reason.text))

        self.app.push_screen(ReasonPrompt(f"Block {name}", "Sessions will not touch it until it is unblocked.",
                                          ok_label="Block", danger=True, value=self._kept(Block, name)), done)

    def do_unblock(self, arg: str = "") -> None:
        if self.ledger is None:
            return
        name = self._selected(states=("blocked", "failed"), verb="unblocked")
        if name is None:
            return
        # "queued" first: starting a target over is the usual way back; the rest in summary order.
        order = {s: i for i, s in enumerate(SUMMARY_ORDER)} | {"queued": -1}
        states = sorted((s for s in self.ledger.states() if s not in ("blocked", "failed", "awaiting_approval")),
                        key=lambda s: (order.get(s, 99), s))

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.app.submit(Unblock(self._revision(), name, reason.choice or "queued", reason.text))

        where = " in production" if self._production() else ""
        self.app.push_screen(ReasonPrompt(f"Unblock {name}{where}", "Choose the state it goes back to.", ok_label="Unblock",
                                          danger=self._production(), choices=states or list(BASE_STATES),
                                          choice_label="Back to state", value=self._kept(Unblock, name)), done)

    def do_start_session(self, arg: str = "") -> None:
        self.app.submit(StartSession(self._revision()))

    def do_request_stop(self, arg: str = "") -> None:
        self.app.submit(RequestStop(self._revision()))

    def do_accept_removal(self, arg: str = "") -> None:
        self._accept(AcceptRemoval(self._revision()), "Accept that the missing targets were removed on purpose?",
                     "The same as `handoff check --accept-removal`: the engine stops treating the file as cut short. "
                     "If the file was truncated by accident, restore it instead.")

    def do_accept_rollback(self, arg: str = "") -> None:
        self._accept(AcceptRollback(self._revision()), "Accept the older file as the right one?",
                     "The same as `handoff check --accept-rollback`: what went backwards stays that way. "
                     "If a newer copy exists, restore it instead.")

    def _accept(self, request: AcceptRemoval | AcceptRollback, title: str, explanation: str) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self.app.submit(request)

        self.app.push_screen(ConfirmScreen(title, explanation, yes="Accept", no="Not now", danger=True), done)
