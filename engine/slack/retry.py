"""When a request message Slack refused to post or edit is tried again. Slack said no (the bot
is not in the channel, the channel is gone or archived) and only a person can change that:
trying every poll would fill stderr twice a second and spend the rate limit every other message
and decision shares. So, per message: tried again after FIRST seconds, the pause doubled with
each refusal up to MOST; said once, with what to do, and again only when the refusal changes;
forgotten when a try succeeds or the ledger names another channel (then tried at once). Nothing
here waits: a message not due yet is passed over, the others are done as usual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

FIRST = 2.0  # seconds before the second try
MOST = 300.0  # the longest pause: a bot invited is seen within five minutes

WHAT_TO_DO = {
    "not_in_channel": "invite the app's bot to {channel} (`/invite @the-app` in the channel)",
    "channel_not_found": ("the bot cannot see {channel}: check the channel id in the ledger's `notify:`, "
                          "or invite the bot if the channel is private"),
    "is_archived": "{channel} is archived: unarchive it, or name another channel in the ledger's `notify:`",
}


def what_to_do(error: str, channel: str) -> str:
    """What a person does about Slack's `error` for `channel` (empty when there is nothing to say)."""
    hint = WHAT_TO_DO.get(error)
    return hint.format(channel=channel) if hint else ""


@dataclass
class _Refused:
    channel: str
    error: str
    pause: float
    at: float  # when it may be tried again (the clock's time)


class Held:
    """The refused messages of one watched ledger, keyed by what was tried (post or edit, message key)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._refused: dict[str, _Refused] = {}
        self._lock = threading.Lock()

    def due(self, key: str, channel: str) -> bool:
        """May `key` be tried in `channel` now (never refused there, or its pause is over)?"""
        with self._lock:
            held = self._refused.get(key)
            return held is None or held.channel != channel or self.clock() >= held.at

    def refused(self, key: str, channel: str, error: str) -> float | None:
        """Slack refused `key` in `channel` with `error`: its next pause. Returns that pause when the
        refusal is new (to be said), None when it is the one said already."""
        with self._lock:
            held = self._refused.get(key)
            same = held is not None and (held.channel, held.error) == (channel, error)
            pause = min(held.pause * 2, MOST) if same and held is not None else FIRST
            self._refused[key] = _Refused(channel, error, pause, self.clock() + pause)
            return None if same else pause

    def succeeded(self, key: str) -> bool:
        """`key` went through: forgotten. True when it had been refused (its success is worth saying)."""
        with self._lock:
            return self._refused.pop(key, None) is not None
