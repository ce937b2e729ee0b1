"""Checks of what surrounds the runbook: invariants, metrics, the budget, and who is paged."""

from __future__ import annotations

import urllib.parse

from engine.checks.context import (
    HOST_VALUES,
    Context,
    cannot_print_number,
    is_template_placeholder,
    placeholders,
)
from engine.checks.finding import ERROR, WARNING, closest, did_you_mean
from engine.ledger.invariants import closest_form, parse
from engine.ledger.model import Metric
from engine.notify import EVENTS

METRIC_KEYS = tuple(sorted((info.alias or name) for name, info in Metric.model_fields.items()))


def check_invariants(ctx: Context, acting: bool) -> None:
    """Each invariant must be understood, read a metric that exists, and guard a real step."""
    ledger = ctx.ledger
    steps = {s.name: s for s in ledger.steps()}
    for index, item in enumerate(ledger.invariants):
        inv = parse(item)
        at = ("invariants", index)
        if inv.kind == "unenforced":
            shown = inv.text if isinstance(item, str) else "{" + inv.text + "}"
            fix = (f'write it as "{closest_form(inv.text)}"' if isinstance(item, str) else inv.problem or "")
            ctx.add(ERROR, f'invariant unenforced (not understood): "{shown}"'
                    + (" (a session refuses to start on it)" if acting else ""), *at, code="invariant-unenforced",
                    suggestion=fix + " (`handoff check --explain` lists every form)")
        elif inv.kind == "metric" and inv.metric not in ledger.metrics:
            guess = closest(inv.metric or "", ledger.metrics)
            ctx.add(ERROR, f'the pause threshold "{inv.text}" reads {inv.metric}, which has no source (no `metrics` '
                    "entry): a session cannot read it", *at, code="metric-missing",
                    suggestion=f'did you mean "{guess}"?' if guess else
                    f"add metrics.{inv.metric}.run: a command printing the number (4.2, or 37%)")
        elif inv.kind == "precondition" and steps:
            step = steps.get(inv.step or "")
            if step is None:
                ctx.add(ERROR, f'the invariant "{inv.text}" names step {inv.step}, which the runbook does not have: it '
                        "guards nothing", *at, code="invariant-step",
                        suggestion=did_you_mean(inv.step or "", steps, what="steps"))
            elif step.from_ != inv.state:
                ctx.add(ERROR, f'the invariant "{inv.text}" and runbook step {step.name} disagree: the step starts from '
                        f'"{step.from_}", so the guard refuses it every time', *at, code="precondition-from",
                        suggestion=f'start {step.name} from "{inv.state}", or correct the invariant')
        elif inv.kind == "max_touched" and (inv.limit or 0) < 1:
            ctx.add(ERROR, f'"{inv.text}" allows no target to be touched: no step can ever start', *at,
                    code="max-touched", suggestion="allow at least 1")


def check_metrics(ctx: Context) -> None:
    for name, metric in ctx.ledger.metrics.items():
        at = ("metrics", name)
        for key in metric.__pydantic_extra__ or {}:
            ctx.add(ERROR, f'metric {name}: unknown key "{key}"', *at, key, at_key=True, code="metric-unknown-key",
                    suggestion=did_you_mean(str(key), METRIC_KEYS, what="metric keys"))
        bad = [p for p in placeholders(metric.run) if p not in HOST_VALUES]
        if bad:
            ctx.add(ERROR, f"metric {name} uses {{{bad[0]}}}: a metric command knows only {{ledger_dir}} and {{python}}",
                    *at, "run", code="placeholder")
        if cannot_print_number(metric.run):
            ctx.add(ERROR, f"metric {name}'s run ({' '.join(metric.run)}) never prints a number", *at, "run",
                    code="metric-no-number", suggestion="make it print one number on its last line (4.2, or 37%)")
        if is_template_placeholder(metric.run):
            ctx.add(WARNING, f"metric {name}'s run is still the template's placeholder, which only fails", *at, "run",
                    code="template-placeholder", suggestion="replace it with the real command")


def check_budget(ctx: Context) -> None:
    """Values positive, `handoff_at` a fraction: otherwise a session never hands off."""
    budget = ctx.ledger.budget
    if budget is None:
        return
    for key in ("steps", "minutes", "tokens"):
        value = getattr(budget, key)
        if value is not None and not value > 0:
            ctx.add(ERROR, f"budget.{key} must be more than 0, not {value:g}", "budget", key, code="budget")
    if budget.handoff_at is not None and not 0 < budget.handoff_at <= 1:
        ctx.add(ERROR, f"budget.handoff_at is the fraction of the budget at which a session hands off: more than 0 "
                f"and at most 1, not {budget.handoff_at:g}", "budget", "handoff_at", code="budget",
                suggestion="0.75 hands off at three quarters")


def check_notify(ctx: Context) -> None:
    """Every entry must page someone, on events that exist."""
    ledger = ctx.ledger
    for index, entry in enumerate(ledger.notify):
        at = ("notify", index)
        for event_index, event in enumerate(entry.on or []):
            if event not in EVENTS:
                ctx.add(ERROR, f'notify entry {index + 1} pages on "{event}", an event that does not exist: nobody is '
                        "paged for it", *at, "on", event_index, code="notify-event",
                        suggestion=did_you_mean(event, EVENTS, what="events"))
        if not entry.webhook and not entry.run and entry.slack is None:  # slack: `handoff slack` posts there
            extra = [k for k in entry.__pydantic_extra__ or {} if closest(str(k), ("webhook", "run", "slack"))]
            ctx.add(ERROR, f"notify entry {index + 1} has neither `webhook` nor `run` nor `slack`: it pages nobody", *at,
                    code="notify-empty", suggestion=did_you_mean(str(extra[0]), ("webhook", "run", "slack")) if extra else
                    "add webhook: https://... or run: [command, ...] (or slack: {channel: C0123ABC} for handoff slack)")
        for key in (entry.slack.__pydantic_extra__ or {}) if entry.slack is not None else ():
            ctx.add(ERROR, f'notify entry {index + 1}: unknown key "{key}" in slack (it has channel and os_user): no '
                    "approval from Slack is recorded until it is mended", *at, "slack", key, at_key=True,
                    code="notify-unknown-key", suggestion=did_you_mean(str(key), ("channel", "os_user"), what="keys"))
        if entry.webhook and urllib.parse.urlsplit(entry.webhook).scheme not in ("http", "https"):
            ctx.add(ERROR, f"notify entry {index + 1}: the webhook must be an http:// or https:// URL", *at, "webhook",
                    code="notify-webhook")
        bad = [p for p in placeholders(entry.run) if p not in HOST_VALUES]
        if bad:
            ctx.add(WARNING, f"notify entry {index + 1} has {{{bad[0]}}} in its run, which stays as written: a pager "
                    "knows only {ledger_dir} and {python} (the message comes as the last argument)", *at, "run",
                    code="placeholder")
        if is_template_placeholder(entry.run):
            ctx.add(WARNING, f"notify entry {index + 1}'s run is still the template's placeholder, which only fails",
                    *at, "run", code="template-placeholder", suggestion="replace it with the real pager command")
    named = sorted({n.slack.os_user for n in ledger.notify if n.slack is not None and n.slack.os_user})
    if len(named) > 1:
        ctx.add(ERROR, f"the Slack channels in notify name {' and '.join(named)} as the OS user of `handoff slack`: no "
                "approval from Slack is recorded until one is named", "notify", code="notify-slack-users",
                suggestion="name the same os_user on every slack entry")
    gates = [s.name for s in ledger.steps() if not s.reversible]
    if gates and not ledger.notify:
        ctx.add(WARNING, f"irreversible steps ({', '.join(gates)}) wait for approval, but `notify` is empty: nobody "
                "will be paged", "runbook", code="no-notify",
                suggestion="add notify: [{run: [command, ...]}] or a webhook")
