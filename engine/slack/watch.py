"""Keeping the request messages true: post one when a target starts waiting, edit it
whenever what it shows changes (a new hash, an approval, a block, an expiry), remind
in its thread as the approval policy says, and mark an expired request in place. A message
is closed for good only once its request is over: one whose command cannot be rendered for
now, or whose ledger names no Slack channel any more, shows the request again once it can.

What each message shows is remembered (engine.slack.state) as a digest: a process that
died between an approval and the edit corrects the message when it starts again.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from typing import TextIO

from engine.api import Ledger
from engine.approvals.policy import policy_for, span
from engine.codec.timefmt import parse_iso
from engine.host import console
from engine.slack import blocks
from engine.slack.blocks import Request
from engine.slack.ledgers import Watched, message_key, outcome, request, stands
from engine.slack.retry import MOST, what_to_do
from engine.slack.web import SlackFailed, Web

GONE = "message_not_found"  # what Slack says to an edit of a message deleted in the channel
UNASKED = ("no longer answered in Slack: the ledger names no Slack channel now; approve or reject it with "
           "`handoff approve` or `handoff reject`, or in the TUI")


def expired(ledger: Ledger, r: Request, now: float) -> str | None:
    """`expired after 24h: never approved` once the step's `expire_after` has passed."""
    step = ledger.step(r.step)
    since = parse_iso(r.since)
    after = policy_for(ledger, step).expire_after if step is not None else None
    if after and since is not None and now - since >= after:
        return f"approval request expired after {span(after)}: never approved; nothing will run from this request"
    return None


def sync(w: Watched, web: Web, *, now: float | None = None, err: TextIO = sys.stderr) -> None:
    """Bring every request message of `w` in line with the ledger (see the module)."""
    now = time.time() if now is None else now
    ledger = w.handle.load()
    channel = w.channel(ledger)
    if channel is not None:  # no channel: nothing is asked in Slack
        _ask(w, web, ledger, channel, now, err)
    for key, msg in w.state.all_messages().items():
        if msg.get("final") or msg.get("gone") or not w.held.due(f"edit {key}", msg["channel"]):
            continue
        try:
            _refresh(w, web, ledger, key, msg, now, channel)
        except SlackFailed as error:
            if error.error == GONE:  # no edit can ever succeed: said once, never tried again (not twice a second)
                w.state.note_message(key, gone=True)
                again = "posted again" if channel is not None and stands(ledger, msg["target"], msg["step"], msg["since"]) \
                    else "not edited again"
                console.say(f"handoff slack: {w.handle.display_location}: the message for {msg.get('target')} is gone "
                            f"from Slack (deleted?): {again}", err)
                continue
            _refused(w, f"edit {key}", msg["channel"], error, f"cannot update the message for {msg.get('target')}", err)
            continue
        _through(w, f"edit {key}", f"updated the message for {msg.get('target')} in {msg['channel']} again", err)


def _ask(w: Watched, web: Web, ledger: Ledger, channel: str, now: float, err: TextIO) -> None:
    """Post each request waiting in `channel` that has no message there yet."""
    for name in ledger.targets:
        r = request(w, ledger, name)
        if r is None:
            continue
        if not w.held.due(f"post {message_key(name, r.step, r.since)}", channel):
            continue  # Slack refused it here: tried again once its pause is over (engine.slack.retry)
        posted = w.state.message(message_key(name, r.step, r.since))
        if posted is not None and posted.get("channel") != channel and not posted.get("final"):
            _moved(w, web, r, posted, channel, err)  # the ledger's channel changed: asked again there
            posted = None
        if posted is None or posted.get("gone"):  # gone: deleted in Slack while the request stands
            _post(w, web, r, channel, now, ledger, err)


def _post(w: Watched, web: Web, r: Request, channel: str, now: float, ledger: Ledger, err: TextIO) -> None:
    gone, key = expired(ledger, r, now), message_key(r.target, r.step, r.since)
    try:
        sent = web.call("chat.postMessage", channel=channel, text=blocks.fallback(r, gone), mrkdwn=False,
                        blocks=blocks.request_blocks(r, outcome=gone))
    except SlackFailed as error:
        _refused(w, f"post {key}", channel, error, f"cannot post the request for {r.target}", err)
        return
    w.state.note_message(key, channel=sent.get("channel") or channel, ts=sent["ts"],
                         target=r.target, step=r.step, since=r.since, request=asdict(r),
                         shown=blocks.shown_digest(r, gone), reminded=0, gone=False)
    _through(w, f"post {key}", f"posted the request for {r.target} in {channel} now", err)


def _refused(w: Watched, key: str, channel: str, error: SlackFailed, what: str, err: TextIO) -> None:
    """Slack refused to post or edit a message: said once (what to do with it), tried again later."""
    pause = w.held.refused(key, channel, error.error)
    if pause is None:
        return  # said already, and nothing has changed since
    todo = what_to_do(error.error, channel)
    console.say(f"handoff slack: {w.handle.display_location}: {what} in {channel}: {error}" + (f"; {todo}" if todo else "")
                + f"; tried again in {pause:g}s, then less and less often (up to every {MOST:g}s), and said "
                  "again only if Slack's answer changes", err)


def _through(w: Watched, key: str, text: str, err: TextIO) -> None:
    """A post or edit went through: one Slack had refused is said to work now."""
    if w.held.succeeded(key):
        console.say(f"handoff slack: {w.handle.display_location}: {text}", err)


def _moved(w: Watched, web: Web, r: Request, posted: dict, channel: str, err: TextIO) -> None:
    """The request's message in a channel the ledger no longer names: made final, buttons gone
    (a click there is refused in any case: engine.slack.decide)."""
    moved = f"moved: the ledger now asks in {channel}; answer it there"
    try:
        web.call("chat.update", channel=posted["channel"], ts=posted["ts"], text=blocks.fallback(r, moved),
                 blocks=blocks.request_blocks(r, outcome=moved))
    except SlackFailed as error:
        console.say(f"handoff slack: {w.handle.display_location}: cannot close the message for {r.target} in "
                    f"{posted['channel']}: {error}", err)


def current(w: Watched, ledger: Ledger, msg: dict, now: float) -> tuple[Request, str | None]:
    """What message `msg` should show now: the request (as it is, or as it was) and its outcome."""
    r = request(w, ledger, msg["target"])
    if r is not None and message_key(r.target, r.step, r.since) == message_key(msg["target"], msg["step"], msg["since"]):
        return r, expired(ledger, r, now)
    was = Request(**{**msg["request"], "argv": list(msg["request"]["argv"]),
                     "invariants": [tuple(i) for i in msg["request"]["invariants"]]})
    return was, outcome(ledger, was.target, was.step, was.hash, was.since)


def _refresh(w: Watched, web: Web, ledger: Ledger, key: str, msg: dict, now: float, channel: str | None) -> None:
    r, end = current(w, ledger, msg, now)
    if end is None and channel is None:
        end = UNASKED  # still waiting, but answered elsewhere now: no button left that every click is refused on
    digest = blocks.shown_digest(r, end)
    if digest != msg.get("shown"):
        web.call("chat.update", channel=msg["channel"], ts=msg["ts"], text=blocks.fallback(r, end),
                 blocks=blocks.request_blocks(r, outcome=end))
        w.state.note_message(key, shown=digest, request=asdict(r),
                             final=end is not None and not stands(ledger, msg["target"], msg["step"], msg["since"]))
    if end is None:
        _remind(w, web, ledger, key, msg, r, now)


def _remind(w: Watched, web: Web, ledger: Ledger, key: str, msg: dict, r: Request, now: float) -> None:
    step = ledger.step(r.step)
    every = policy_for(ledger, step).remind_after if step is not None else None
    since = parse_iso(r.since)
    if not every or since is None:
        return
    due = int((now - since) // every)
    if due > int(msg.get("reminded") or 0):
        web.call("chat.postMessage", channel=msg["channel"], thread_ts=msg["ts"], mrkdwn=False,
                 text=blocks.reminder(r, due, span(now - since - (now - since) % every)))
        w.state.note_message(key, reminded=due)
