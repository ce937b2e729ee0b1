"""Checks of each runbook step on its own: its keys, its commands, its placeholders,
and what `until`, `retries` and irreversibility allow together."""

from __future__ import annotations

from engine.checks.context import (
    STEP_VALUES,
    Context,
    cannot_print_number,
    has_value,
    is_template_placeholder,
    placeholders,
    scalar_fields,
)
from engine.checks.finding import ERROR, WARNING, closest, did_you_mean, names
from engine.ledger.model import Step
from engine.session.runner import parse_until

STEP_KEYS = tuple(sorted((info.alias or name) for name, info in Step.model_fields.items()))
COMMANDS = ("run", "check", "verify")


def check_steps(ctx: Context) -> None:
    """Every step: known keys, a `run`, sane numbers, fillable placeholders."""
    seen: dict[str, int] = {}
    for index, step in enumerate(ctx.ledger.steps()):
        at = ("runbook", "steps", index)
        guessed = _unknown_keys(ctx, step, at)
        if step.name in seen:
            ctx.add(ERROR, f"two runbook steps are called {step.name} (steps {seen[step.name] + 1} and {index + 1}): "
                    "approvals and the journal name steps, so they must differ", *at, "name", code="step-duplicate",
                    suggestion="rename one of them")
        seen.setdefault(step.name, index)
        if not step.run and "run" not in guessed:
            ctx.add(ERROR, f"runbook step {step.name} has no `run` command: a session cannot do it", *at, at_key=True,
                    code="step-no-run", suggestion="add run: [command, arg, ...] (see docs/ledger.md)")
        _numbers(ctx, step, at)
        _polling(ctx, step, at)
        for key in COMMANDS:
            argv = getattr(step, key)
            _placeholders(ctx, step, key, argv, at)
            if is_template_placeholder(argv):
                ctx.add(WARNING, f"the {key} of runbook step {step.name} is still the template's placeholder, which only fails",
                        *at, key, code="template-placeholder", suggestion="replace it with the real command")


def _unknown_keys(ctx: Context, step: Step, at: tuple) -> set[str]:
    """Report keys a step does not have (almost always a typo); returns what they were taken for."""
    guessed: set[str] = set()
    for key in step.__pydantic_extra__ or {}:
        guess = closest(str(key), STEP_KEYS)
        if guess:
            guessed.add(guess)
        ctx.add(ERROR, f'runbook step {step.name}: unknown key "{key}"', *at, key, at_key=True, code="step-unknown-key",
                suggestion=did_you_mean(str(key), STEP_KEYS, what="step keys"))
    return guessed


def _numbers(ctx: Context, step: Step, at: tuple) -> None:
    for key, value in (("timeout", step.timeout), ("interval", step.interval)):
        if value is not None and not value > 0:
            ctx.add(ERROR, f"runbook step {step.name}: {key} must be more than 0 seconds, not {value:g}", *at, key,
                    code="step-number")
    if step.retries < 0:
        ctx.add(ERROR, f"runbook step {step.name}: retries must be 0 or more, not {step.retries}", *at, "retries",
                code="step-number")


def _polling(ctx: Context, step: Step, at: tuple) -> None:
    """`until` and `retries` re-run a command: never an irreversible one; `until` needs a number."""
    if not step.reversible and step.retries > 0:
        ctx.add(ERROR, f"runbook step {step.name} is irreversible but has retries: {step.retries}; an irreversible "
                "step runs at most once per approval", *at, "retries", code="irreversible-retries",
                suggestion="remove retries, or set reversible: true if running it twice is safe")
    if not step.reversible and not step.touches:
        ctx.add(ERROR, f"runbook step {step.name} is irreversible but says touches: false; an irreversible step changes "
                "its target, so it always counts under \"never touch more than N\"", *at, "touches",
                code="irreversible-touches", suggestion="remove touches: false, or set it only on a read-only reversible step")
    if step.until is None:
        return
    if not step.reversible:
        ctx.add(ERROR, f"runbook step {step.name} is irreversible but has `until`, which re-runs it; an irreversible "
                "step runs at most once per approval", *at, "until", code="irreversible-until",
                suggestion="poll in a reversible step of its own, after this one")
    try:
        parse_until(step.until)
    except ValueError as err:
        ctx.add(ERROR, f"runbook step {step.name}: {err}", *at, "until", code="until-syntax")
        return
    if cannot_print_number(step.run):
        ctx.add(ERROR, f"runbook step {step.name} waits `until: {step.until}`, but its run ({' '.join(step.run or [])}) "
                "never prints a number, so the condition can never hold", *at, "run", code="until-no-number",
                suggestion="make run print the number to watch on its last line (4.2, or 37%)")


def _placeholders(ctx: Context, step: Step, key: str, argv: list[str] | None, at: tuple) -> None:
    """A placeholder some target cannot fill stops that target at render time."""
    unknown = [p for p in placeholders(argv) if p not in STEP_VALUES]
    if not unknown:
        return
    movable = {n: t for n, t in ctx.ledger.targets.items() if t.state != "done"}
    for name in unknown:
        lacking = [n for n, t in movable.items() if not has_value(t, name)]
        if not lacking:
            continue
        valid = set(STEP_VALUES)
        if movable:
            valid |= set.intersection(*(scalar_fields(t) for t in movable.values()))
        guess = closest(name, valid)
        hint = (f'did you mean "{{{guess}}}"? ' if guess else "") + "valid placeholders: " + ", ".join(
            "{" + v + "}" for v in sorted(valid))
        ctx.add(ERROR, f"the {key} of runbook step {step.name} uses {{{name}}}, which {names(lacking)} "
                f"{'does' if len(lacking) == 1 else 'do'} not have: the step can never be rendered for "
                f"{'it' if len(lacking) == 1 else 'them'}", *at, key, code="placeholder", suggestion=hint)
