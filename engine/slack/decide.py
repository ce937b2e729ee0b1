"""The decision flow: a Review or Reject click, and a modal submitted, in the order the
issue fixes. The transports (engine.slack.http_mode, socket_mode) have already checked
that the request is Slack's, for our app and workspace, and recorded a submission's
delivery key before acking (engine.slack.app.Hub.receive); here, in order:
1. the Slack user maps to an approver through `approvers:` (ids only);
2. the approver is not the requester (and the step's policy allows them);
3. the target still awaits that step with the hash (and revision) the person saw,
   else "the command changed; review again" and the message is refreshed; its checkpoint
   drift is the one the modal showed (none, or that one: the modal said "approve anyway"),
   else "the checkpoint drift changed; review again"; and an approval only of a command
   Slack could show whole (else: approve it on a terminal);
4. approve through engine.api's `approve` (the same operation, lock, fencing and
   journal as `handoff approve --expect-hash`), `via: slack`;
5. the delivery is marked done, then the message edited and the person told.
Every refusal is an ephemeral message to the person and a `slack_refused` journal record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from engine.api import (
    ApprovalChanged,
    HandoffError,
    LedgerHandle,
    Refused,
    SlackId,
    checkpoint_drift,
    one_line,
    shell_word,
    untrusted_text,
)
from engine.host import failpoints
from engine.slack import blocks
from engine.slack.ledgers import Watched, approved_by, message_key, request
from engine.slack.watch import expired
from engine.slack.web import SlackFailed

CHANGED = "the command changed; review again"
DRIFT_CHANGED = "the checkpoint drift changed since the Review you answered (a drift recorded, changed or reconciled); review again"


class Decider:
    """Runs clicks and submissions against the watched ledgers (one thread: the worker's)."""

    def __init__(self, ledgers: dict[str, Watched], web, sync: Callable[[Watched], None], now: Callable[[], float],
                 say: Callable[[str], None]):
        self.ledgers, self.web, self.sync, self.now, self.say = ledgers, web, sync, now, say

    # -- helpers -------------------------------------------------------------------

    @staticmethod
    def who(payload: dict[str, Any], channel: str | None, ts: str | None) -> SlackId:
        user = payload.get("user") or {}
        team = user.get("team_id") or (payload.get("team") or {}).get("id") or ""
        return SlackId(team=team, user=user.get("id") or "", channel=channel, ts=ts)

    def tell(self, slack: SlackId, text: str) -> None:
        """An ephemeral message to the person who clicked (only they see it)."""
        if slack.channel:
            try:
                self.web.call("chat.postEphemeral", channel=slack.channel, user=slack.user,
                              text=blocks.mrkdwn(one_line(text, 2900)), blocks=blocks.said(text))
            except SlackFailed as err:  # telling is best effort: the journal has the record, the message the outcome
                self.say(f"cannot tell {slack.user}: {err}")

    def refuse(self, w: Watched | None, slack: SlackId, target: str | None, why: str) -> str:
        if w is not None:
            w.handle.journal.append("slack_refused", f"{target or '-'}: Slack user {slack.ref} refused: {why}",
                                    actor=f"slack:{slack.ref}", target=target, user=w.handle.os_user,
                                    slack=slack.record(), why=why)
        self.tell(slack, f"Nothing was done: {why}")
        return f"refused: {why}"

    # -- clicks --------------------------------------------------------------------

    def action(self, payload: dict[str, Any]) -> None:
        """Review or Reject clicked on a request message: open the modal, or say why not."""
        act = (payload.get("actions") or [{}])[0]
        ref = json.loads(act.get("value") or "{}")
        channel = (payload.get("channel") or {}).get("id") or (payload.get("container") or {}).get("channel_id")
        ts = (payload.get("message") or {}).get("ts") or (payload.get("container") or {}).get("message_ts")
        slack = self.who(payload, channel, ts)
        w = self.ledgers.get(ref.get("l"))
        if w is None:
            self.refuse(None, slack, ref.get("t"), "this message is for a ledger this process does not watch")
            return
        ledger = w.handle.load()
        try:
            w.handle.slack_approver(ledger, ref.get("t", ""), slack)
        except Refused as err:
            self.refuse(w, slack, ref.get("t"), err.message)
            return
        r = request(w, ledger, ref.get("t", ""))
        approving = act.get("action_id") == blocks.REVIEW
        why = self._elsewhere(w, ledger, channel, ts, r) or \
            self._stale(ledger, ref.get("t", ""), ref.get("s"), ref.get("h"), None, r) or \
            self._flagged(w, ledger, ref.get("t", ""), approving) or \
            self._unshown(w, r, approving)
        if why or r is None:  # _stale always says why when there is no request
            self.refuse(w, slack, ref.get("t"), why or "no request")
            self.sync(w)
            return
        view = (blocks.approve_view if act.get("action_id") == blocks.REVIEW else blocks.reject_view)(r, channel=channel, ts=ts)
        self.web.call("views.open", trigger_id=payload.get("trigger_id"), view=view)

    @staticmethod
    def _elsewhere(w: Watched, ledger, channel: str | None, ts: str | None, r) -> str | None:
        """Why a click or a submission is not on the message this process posted for the request,
        in the ledger's channel now (None: it is). A copy of the message elsewhere, or one left in
        a channel the ledger has since moved from, answers nothing."""
        own = w.channel(ledger)
        if channel != own:
            return (f"this request is answered only in the ledger's channel {own or '(none set)'}, "
                    f"not in {channel or 'an unknown channel'}")
        posted = w.state.message(message_key(r.target, r.step, r.since)) if r is not None else None
        if posted is not None and ts is not None and (posted.get("channel"), posted.get("ts")) != (channel, ts):
            return "this is not the message posted for the request now; answer the request's own message"
        return None

    def _stale(self, ledger, name: str, step: str | None, digest: str | None, revision: int | None, r) -> str | None:
        """Why the request the person saw no longer stands (None: it does)."""
        done = approved_by(ledger, name, step or "", digest or "", None)
        if r is None or r.step != step:
            return f"already {done}" if done else f"{name} no longer awaits approval of {step}"
        if expired(ledger, r, self.now()):
            return expired(ledger, r, self.now())
        if r.hash != digest:
            return CHANGED
        if revision is not None and r.revision != revision:
            return f"the ledger changed since you looked (revision {revision}, now {r.revision}); review again"
        return None

    @staticmethod
    def _drift_moved(r, meta: dict[str, Any], approving: bool) -> str | None:
        """Why an approval cannot stand on the modal answered: the drift it showed (its digest, `d`;
        none in a modal that showed none) is not the target's now (None: it is, or this is no approval)."""
        if not approving or r is None or blocks.drift_digest(r.drift) == meta.get("d"):
            return None
        return DRIFT_CHANGED

    @staticmethod
    def _flagged(w: Watched, ledger, name: str, approving: bool) -> str | None:
        """Why a Review cannot lead to an approval now: the target was changed outside the engine
        and the engine's approve refuses it until a person reconciles it (engine.ledger.ops.approve),
        said on the click rather than after the person read the modal and pressed Approve."""
        target = ledger.targets.get(name)
        if not approving or target is None or not target.changed_outside:
            return None
        return f"{untrusted_text(name, target, w.handle.display_location)}; nothing was approved"

    @staticmethod
    def _unshown(w: Watched, r, approving: bool) -> str | None:
        """Why this approval cannot come from Slack: Slack could not show the command whole, so
        the person would approve what they never saw (None: it did, or this is not an approval)."""
        if not approving or blocks.shown_whole(r.argv):
            return None
        return (f"the command of {r.target}: {r.step} is too long for Slack to show whole, so it cannot be approved "
                f"from Slack; read it and approve it on a terminal: handoff approve "
                f"{shell_word(w.handle.display_location)} {shell_word(r.target)} (or in the TUI)")

    # -- submissions ---------------------------------------------------------------

    def submission(self, key: str, payload: dict[str, Any]) -> str:
        """A Review or Reject modal submitted (its delivery `key` already recorded): decide it."""
        view = payload.get("view") or {}
        meta = json.loads(view.get("private_metadata") or "{}")
        slack = self.who(payload, meta.get("c"), meta.get("ts"))
        name = meta.get("t", "")
        w = self.ledgers.get(meta.get("l"))
        if w is None:
            return self.refuse(None, slack, name, "this request is for a ledger this process does not watch")
        ledger = w.handle.load()
        try:
            approver = w.handle.slack_approver(ledger, name, slack)  # 1 and 2
        except Refused as err:
            return self.refuse(w, slack, name, err.message)
        r = request(w, ledger, name)
        why = self._elsewhere(w, ledger, meta.get("c"), meta.get("ts"), r) or \
            self._stale(ledger, name, meta.get("s"), meta.get("h"), meta.get("rev"), r) or \
            self._drift_moved(r, meta, view.get("callback_id") == blocks.APPROVE_VIEW) or \
            self._unshown(w, r, view.get("callback_id") == blocks.APPROVE_VIEW)  # 3
        if why:
            out = self.refuse(w, slack, name, why)
            self.sync(w)
            return out
        handle = LedgerHandle(w.location, actor=approver)
        failpoints.reached("slack-before-approve")  # tests: the ledger changes after the checks, before the lock
        try:
            if view.get("callback_id") not in (blocks.APPROVE_VIEW, blocks.REJECT_VIEW):
                return self.refuse(w, slack, name, "not a Review or Reject submission of this app")
            if view.get("callback_id") == blocks.REJECT_VIEW:
                reason = blocks.typed(payload, blocks.REASON_BLOCK, blocks.REASON_INPUT).strip() or "rejected from Slack"
                # Bound, under the lock, to the request the modal was opened on (3), as an approval is.
                handle.reject(name, reason, slack=slack, step=meta.get("s"), expect_hash=meta.get("h"),
                              expect_revision=meta.get("rev"))
                done = f"{name}: {meta.get('s')} rejected by {approver}: {reason}"
            else:
                # Bound, under the lock, to the drift the modal showed: the one read here, whose digest matched (3).
                a = handle.approve(name, step=meta.get("s"), expect_hash=meta.get("h"), expect_revision=meta.get("rev"),
                                   slack=slack, expect_drift=checkpoint_drift(ledger.targets[name]))  # 4
                done = f"{name}: {a.step} approved by {a.by} at {a.at}, hash {a.hash}"
        except ApprovalChanged:
            out = self.refuse(w, slack, name, CHANGED)
            self.sync(w)
            return out
        except HandoffError as err:
            return self.refuse(w, slack, name, err.message)
        w.state.finish(key, done)  # 5: the decision is on disk before Slack hears of it
        failpoints.reached("slack-after-decision")
        self.sync(w)
        self.tell(slack, done + (f" ({handle.woke})" if handle.woke else ""))
        return done
