"""Slack's Web API through slack-sdk's WebClient (base URL from HANDOFF_SLACK_API_URL),
tried again with a growing pause while Slack is unreachable or busy (no connection,
HTTP 429 or 5xx), saying so on stderr each time, secrets masked. TUI and CLI approvals
never wait on this: only the request messages are late.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from engine.host import console
from engine.slack.secrets import Secrets

BACKOFF = 0.5  # seconds before the second try; doubled each time, up to MAX_PAUSE
MAX_PAUSE = 30.0


class SlackFailed(Exception):
    """Slack answered, and said no (`ok: false`): trying again would not help. `error`: Slack's
    error code (`message_not_found`), empty when Slack could not be reached."""

    def __init__(self, text: str, error: str = "") -> None:
        super().__init__(text)
        self.error = error


class Web:
    """One bot's Web API client."""

    def __init__(self, secrets: Secrets, *, err: TextIO = sys.stderr, attempts: int = 0) -> None:
        from slack_sdk import WebClient

        base = secrets.api_url if secrets.api_url.endswith("/") else secrets.api_url + "/"
        self.secrets = secrets
        # retry_handlers=[]: this loop retries, and says so; the SDK's own handlers would retry silently first
        self.client = WebClient(token=secrets.bot_token, base_url=base, timeout=10, retry_handlers=[])
        self.err = err
        self.attempts = attempts  # 0: until it works (the process is long-running)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """`method` with `params` (JSON), retried while Slack cannot be reached; the answer's data."""
        from slack_sdk.errors import SlackApiError

        pause, attempt = BACKOFF, 0
        while True:
            attempt += 1
            try:
                data = self.client.api_call(method, json=params).data
                if not isinstance(data, dict):
                    raise ValueError(f"Slack answered {method} with {type(data).__name__}, not a JSON object")
                return dict(data)
            except SlackApiError as err:
                status = err.response.status_code
                if status != 429 and status < 500:
                    code = self.secrets.mask(str(err.response.get("error")))
                    raise SlackFailed(f"{method}: {code}", code) from None
                why = f"HTTP {status}"
            except (OSError, TimeoutError) as err:
                why = self.secrets.mask(f"{type(err).__name__}: {err}")[:200]
            if self.attempts and attempt >= self.attempts:
                raise SlackFailed(f"{method}: Slack unreachable after {attempt} tries ({why})")
            console.say(f"handoff slack: {method}: Slack unreachable ({why}); trying again in {pause:g}s", self.err)
            time.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)
