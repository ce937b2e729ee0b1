"""The anthropic SDK client a session uses, and what its failures mean for the session.

Credentials and the endpoint are the SDK's own: `ANTHROPIC_API_KEY`,
`ANTHROPIC_AUTH_TOKEN`, an SDK profile or workload identity, and `ANTHROPIC_BASE_URL`
(tests point it at a local fake). `make_client` refuses, before anything is written,
when the SDK finds no credential at all.

The SDK retries 408, 409, 429, 529 and 5xx answers and dropped connections itself,
with backoff (honouring `retry-after` when it is above zero). What is still failing
after those retries is `PlannerUnavailable` (exit 6: the service stayed unavailable);
an answer that no retry can fix (a rejected key, an unknown model, a request the
API refuses) is `PlannerRefused` (exit 2: it cannot proceed as configured).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from engine.errors import HandoffError, UsageError

API_RETRIES = 3  # on top of the first try; with backoff 0.5 s, 1 s, 2 s (or what retry-after says)
# Seconds for one request. A turn's request is a brief of a few kilobytes (about 1,000-2,000
# tokens) and its answer at most MAX_OUTPUT (4,096) tokens, mostly a short tool call: well
# under a minute at the API's usual speeds. A hung request costs at most 4 x 60 s, and a
# session told to stop does not wait for it at all (`wait_for`).
API_TIMEOUT = 60.0
POLL = 0.2  # how often a wait on the model looks at whether the session was told to stop


class PlannerUnavailable(HandoffError):
    """The model's API stayed unavailable after the SDK's retries."""

    title = "Planner unavailable"
    exit_code = 6


class PlannerRefused(HandoffError):
    """The model's API refused the session's requests in a way no retry fixes."""

    title = "Planner refused"
    exit_code = 2


class PlannerInterrupted(Exception):
    """The session was told to stop (stop, SIGTERM) while it waited on the model, or the wait ran out."""


class ForcedToolRefused(Exception):
    """The API does not accept a forced tool_choice for this model (a 400 naming it)."""


def make_client():
    """An `anthropic.Anthropic` client, or UsageError (exit 2) naming what is missing."""
    import anthropic

    try:
        client = anthropic.Anthropic(max_retries=API_RETRIES, timeout=API_TIMEOUT)
    except (anthropic.AnthropicError, ValueError, OSError) as err:
        raise UsageError(f"the anthropic SDK could not set up its credentials: {err}", title="No credential") from None
    if not (client.api_key or client.auth_token or client.credentials):
        raise UsageError(
            "--planner claude needs an Anthropic credential and the SDK found none: set ANTHROPIC_API_KEY "
            "(or ANTHROPIC_AUTH_TOKEN, or an SDK profile); nothing was changed",
            title="No credential",
        )
    return client


def create(client, **request: Any):
    """`client.messages.create(**request)`, with the SDK's errors turned into ours."""
    import anthropic

    try:
        return client.messages.create(**request)
    except anthropic.APIStatusError as err:
        detail = f"HTTP {err.status_code} {err.type or ''}".rstrip() + f": {err.api_message or err.message}"
        if err.status_code == 400 and "tool_choice" in request and "tool_choice" in str(err.api_message or err.message):
            raise ForcedToolRefused(detail) from None
        if err.status_code in (408, 409, 429) or err.status_code >= 500:
            raise PlannerUnavailable(f"the model's API answered {detail} (after {API_RETRIES} retries)") from None
        raise PlannerRefused(f"the model's API refused the request: {detail}") from None
    except anthropic.APIConnectionError as err:
        raise PlannerUnavailable(f"cannot reach the model's API: {err.message} (after {API_RETRIES} retries)") from None


def wait_for(client, stop: Callable[[], str | None], *, limit: float | None = None, **request: Any):
    """`create(client, **request)`, given up on as soon as `stop()` says why (or after `limit`
    seconds): PlannerInterrupted. The request runs in a daemon thread, which is left to
    finish or time out on its own; its answer, if one comes, is thrown away."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def call() -> None:
        try:
            box["response"] = create(client, **request)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread, raised there
            box["error"] = err
        finally:
            done.set()

    threading.Thread(target=call, name="planner-request", daemon=True).start()
    deadline = None if limit is None else time.monotonic() + limit
    while not done.wait(POLL):
        why = stop()
        if why:
            raise PlannerInterrupted(why)
        if deadline is not None and time.monotonic() >= deadline:
            raise PlannerInterrupted(f"the model gave no answer within {limit:g} s")
    if "error" in box:
        raise box["error"]
    return box["response"]
