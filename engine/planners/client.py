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

from typing import Any

from engine.errors import HandoffError, UsageError

API_RETRIES = 3  # on top of the first try; with backoff 0.5 s, 1 s, 2 s (or what retry-after says)
API_TIMEOUT = 120.0  # seconds for one request: a turn's answer is short


class PlannerUnavailable(HandoffError):
    """The model's API stayed unavailable after the SDK's retries."""

    title = "Planner unavailable"
    exit_code = 6


class PlannerRefused(HandoffError):
    """The model's API refused the session's requests in a way no retry fixes."""

    title = "Planner refused"
    exit_code = 2


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
