"""Is this request Slack's, for our app and our workspace? (the decision flow's first check)

HTTP mode: `X-Slack-Signature` is `v0=` + HMAC-SHA256 over `v0:{X-Slack-Request-Timestamp}:{body}`
with the app's signing secret, compared in constant time; the timestamp must be within
300 s of now either way (an old, captured request is never replayed). Both modes: the
payload's `api_app_id` must be the configured app and its team (or enterprise) the
workspace the bot token belongs to (`auth.test`). Each check returns why it fails, or None.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

WINDOW = 300.0  # seconds: Slack's own advice for the timestamp check


def signature_problem(secret: str, timestamp: str | None, signature: str | None, body: bytes, *,
                      now: float | None = None) -> str | None:
    """Why this HTTP request is not signed by Slack with `secret` now, or None."""
    if not timestamp or not signature:
        return "no X-Slack-Request-Timestamp or X-Slack-Signature header"
    try:
        sent = int(timestamp)
    except ValueError:
        return "X-Slack-Request-Timestamp is not a number"
    now = time.time() if now is None else now
    if abs(now - sent) > WINDOW:
        return f"the request was signed {abs(now - sent):.0f}s from now (more than {WINDOW:.0f}s): refused as a replay"
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    expected = "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii", "replace")):
        return "the X-Slack-Signature does not match the signing secret"
    return None


def identity_problem(payload: dict[str, Any], *, app_id: str, team_id: str, enterprise_id: str | None) -> str | None:
    """Why `payload` is not for our app in our workspace, or None."""
    if payload.get("api_app_id") != app_id:
        return f"the request is for app {str(payload.get('api_app_id'))[:20]!r}, not {app_id}"
    # Both the workspace the request is in (`team.id`) and the clicking user's own (`user.team_id`, what
    # the approver is matched by): in a channel shared with another workspace they differ.
    teams = [(payload.get("team") or {}).get("id"), (payload.get("user") or {}).get("team_id")]
    enterprise = (payload.get("enterprise") or {}).get("id") if isinstance(payload.get("enterprise"), dict) else None
    for team in [t for t in teams if t] or [None]:
        if team != team_id and not (enterprise_id and enterprise == enterprise_id):
            return f"the request comes from workspace {str(team)[:20]!r}, not {team_id}"
    return None
