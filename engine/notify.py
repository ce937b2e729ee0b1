"""Paging a human: the ledger's `notify:` entries, a webhook or a command.

`webhook`: HTTP POST of JSON `{"text": message, "event": event}` (what a Slack
incoming webhook expects, with the event name for filters). `run`: an argv, given the
message as its last argument; `{ledger_dir}` and `{python}` are filled in per argument
and nothing goes through a shell. `on:` lists the events a notifier wants.
`slack: {channel: C...}` is not paged from here: `handoff slack` (engine.slack) posts
approval requests there and takes approvals back.

A delivery that fails for a passing reason (no connection, a timeout, HTTP 429 or 5xx,
a command that exits non-zero) is tried again with a growing pause, a few times. A
pager that still fails never raises: the result says so and the session journals it
and goes on. The job is already in trouble when it pages; the pager must not add to it.

Commands are run by the caller's runner (the session's, which kills a whole process
group on timeout), passed in: this module knows nothing of sessions.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from engine.approvals.people import AGENT_VAR
from engine.ledger.model import Notifier

# The events the session pages on; `on:` in a notifier picks from these.
EVENTS: tuple[str, ...] = (
    "approval_needed",
    "approval_escalated",  # engine.approvals.policy: escalate_after pages the next notify entry
    "drift",
    "blocked",
    "failed",
    "paused",
    "lease_takeover",
    "workflow_ended",  # a Temporal workflow ended without handing off (engine.temporal)
)
_PLACEHOLDER = re.compile(r"\{(ledger_dir|python)\}")


ATTEMPTS = 3  # per delivery
BACKOFF = 0.5  # seconds before the second attempt; doubled before each next one

# run_command(argv, timeout=...) -> an object with exit_code, timed_out and output_tail
# (engine.session.runner.run_step's StepResult).
RunCommand = Callable[..., Any]


@dataclass
class PageResult:
    """One delivery: where to (secrets left out), whether it worked, and how many tries it took."""

    target: str
    ok: bool
    error: str | None
    attempts: int = 1


def listeners(notifiers: list[Notifier], event: str) -> list[Notifier]:
    """The notifiers that want `event` (all of them, for a notifier with no `on:`)."""
    return [n for n in notifiers if not n.on or event in n.on]


def send_pages(
    notifiers: list[Notifier],
    message: str,
    *,
    event: str,
    ledger_dir: str,
    python: str,
    run_command: RunCommand,
    timeout: float = 5.0,
    attempts: int = ATTEMPTS,
    backoff: float = BACKOFF,
) -> list[PageResult]:
    """Send `message` to every notifier whose `on:` includes `event` (or has no `on:`).

    One result per delivery, in order; a notifier with both `webhook` and `run` gets
    both. Never raises for a failed delivery.
    """
    results: list[PageResult] = []
    for notifier in listeners(notifiers, event):
        if notifier.webhook:
            results.append(_retry(partial(_post, notifier.webhook, message, event, timeout), attempts, backoff))
        if notifier.run:
            results.append(_retry(partial(_run, notifier.run, message, ledger_dir, python, timeout, run_command),
                                  attempts, backoff))
        if not notifier.webhook and not notifier.run and notifier.slack is None:  # `handoff slack` posts to a channel itself
            results.append(PageResult("notifier", False, "this notify entry has neither `webhook` nor `run`"))
    return results


def _retry(deliver: Callable[[], tuple[PageResult, bool]], attempts: int, backoff: float) -> PageResult:
    """Deliver until it works, fails for good, or `attempts` run out."""
    pause = backoff
    for attempt in range(1, max(1, attempts) + 1):
        result, passing = deliver()
        result.attempts = attempt
        if result.ok or not passing or attempt == attempts:
            return result
        time.sleep(pause)
        pause *= 2
    return result


def webhook_label(url: str) -> str:
    """`webhook hooks.slack.com`: the host only, because a webhook's path is its secret."""
    host = urllib.parse.urlsplit(url).hostname or "?"
    return f"webhook {host}"


def _post(url: str, message: str, event: str, timeout: float) -> tuple[PageResult, bool]:
    """One POST; returns (result, whether a failure may pass if tried again)."""
    label = webhook_label(url)
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return PageResult(label, False, "a webhook must be an http:// or https:// URL"), False
    body = json.dumps({"text": message, "event": event}).encode("utf-8")
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(65536)  # let the server finish; the body itself is not needed
            status = response.status
    except urllib.error.HTTPError as error:
        return PageResult(label, False, f"HTTP {error.code} {error.reason}"), error.code == 429 or error.code >= 500
    except urllib.error.URLError as error:
        return PageResult(label, False, f"cannot reach it: {error.reason}"), True
    except TimeoutError:
        return PageResult(label, False, f"no answer within {timeout:g}s"), True
    except ValueError as error:  # a URL urllib cannot use: trying again will not help
        return PageResult(label, False, f"{type(error).__name__}: {error}"), False
    except OSError as error:  # the connection broke mid-way
        return PageResult(label, False, f"{type(error).__name__}: {error}"), True
    if not 200 <= status < 300:
        return PageResult(label, False, f"HTTP {status}"), status == 429 or status >= 500
    return PageResult(label, True, None), False


def _run(template: list[str], message: str, ledger_dir: str, python: str, timeout: float, run_command: RunCommand) -> tuple[PageResult, bool]:
    values = {"ledger_dir": ledger_dir, "python": python}
    # One pass per argument, so a path that itself contains "{python}" stays as it is.
    argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in template]
    # The journal says what ran, not the template it came from (the message is left out).
    label = f"run {shlex.join(argv)}"
    argv.append(message)
    # A pager is a process the engine spawns: it runs for an agent (engine.approvals.people), never as a person.
    env = {**os.environ, AGENT_VAR: os.environ.get(AGENT_VAR) or "the engine's pager"}
    result = run_command(argv, timeout=timeout, tail_bytes=400, env=env)
    if result.timed_out:
        return PageResult(label, False, f"no exit within {timeout:g}s (killed)"), True
    if result.exit_code in (126, 127):  # cannot be run at all: the same next time
        return PageResult(label, False, f"exit {result.exit_code}: {result.output_tail.strip()}"), False
    if result.exit_code != 0:
        last = result.output_tail.strip().splitlines()[-1:] or [""]
        tail = f": {last[0]}" if last[0] else ""
        return PageResult(label, False, f"exit {result.exit_code}{tail}"), True
    return PageResult(label, True, None), False
