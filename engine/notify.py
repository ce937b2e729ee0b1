"""Paging a human: the ledger's `notify:` entries, a webhook or a command.

`webhook`: HTTP POST of JSON `{"text": message, "event": event}` (what a Slack
incoming webhook expects, with the event name for filters). `run`: an argv, given the
message as its last argument; `{ledger_dir}` and `{python}` are filled in per argument
and nothing goes through a shell. `on:` lists the events a notifier wants.

A pager that fails never raises: the result says so and the session journals it and
goes on. The job is already in trouble when it pages; the pager must not add to it.
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from engine.model import Notifier
from engine.session.runner import run_step

# The events the session pages on; `on:` in a notifier picks from these.
EVENTS: tuple[str, ...] = (
    "approval_needed",
    "drift",
    "blocked",
    "failed",
    "paused",
    "lease_takeover",
)
_PLACEHOLDER = re.compile(r"\{(ledger_dir|python)\}")


@dataclass
class PageResult:
    """One delivery attempt: where to (secrets left out), and whether it worked."""

    target: str
    ok: bool
    error: str | None


def send_pages(
    notifiers: list[Notifier],
    message: str,
    *,
    event: str,
    ledger_dir: str,
    python: str,
    timeout: float = 5.0,
) -> list[PageResult]:
    """Send `message` to every notifier whose `on:` includes `event` (or has no `on:`).

    One result per delivery, in order; a notifier with both `webhook` and `run` gets
    both. Never raises for a failed delivery.
    """
    results: list[PageResult] = []
    for notifier in notifiers:
        if notifier.on and event not in notifier.on:
            continue
        if notifier.webhook:
            results.append(_post(notifier.webhook, message, event, timeout))
        if notifier.run:
            results.append(_run(notifier.run, message, ledger_dir, python, timeout))
        if not notifier.webhook and not notifier.run:
            results.append(
                PageResult("notifier", False, "this notify entry has neither `webhook` nor `run`")
            )
    return results


def webhook_label(url: str) -> str:
    """`webhook hooks.slack.com`: the host only, because a webhook's path is its secret."""
    host = urllib.parse.urlsplit(url).hostname or "?"
    return f"webhook {host}"


def _post(url: str, message: str, event: str, timeout: float) -> PageResult:
    label = webhook_label(url)
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return PageResult(label, False, "a webhook must be an http:// or https:// URL")
    body = json.dumps({"text": message, "event": event}).encode("utf-8")
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(65536)  # let the server finish; the body itself is not needed
            status = response.status
    except urllib.error.HTTPError as error:
        return PageResult(label, False, f"HTTP {error.code} {error.reason}")
    except urllib.error.URLError as error:
        return PageResult(label, False, f"cannot reach it: {error.reason}")
    except TimeoutError:
        return PageResult(label, False, f"no answer within {timeout:g}s")
    except (OSError, ValueError) as error:
        # ValueError: a URL urllib cannot use; OSError: the connection broke mid-way.
        return PageResult(label, False, f"{type(error).__name__}: {error}")
    if not 200 <= status < 300:
        return PageResult(label, False, f"HTTP {status}")
    return PageResult(label, True, None)


def _run(template: list[str], message: str, ledger_dir: str, python: str, timeout: float) -> PageResult:
    values = {"ledger_dir": ledger_dir, "python": python}
    # One pass per argument, so a path that itself contains "{python}" stays as it is.
    argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in template]
    # The journal says what ran, not the template it came from (the message is left out).
    label = f"run {shlex.join(argv)}"
    argv.append(message)
    result = run_step(argv, timeout=timeout, tail_bytes=400)
    if result.timed_out:
        return PageResult(label, False, f"no exit within {timeout:g}s (killed)")
    if result.exit_code != 0:
        last = result.output_tail.strip().splitlines()[-1:] or [""]
        tail = f": {last[0]}" if last[0] else ""
        return PageResult(label, False, f"exit {result.exit_code}{tail}")
    return PageResult(label, True, None)
