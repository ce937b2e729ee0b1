"""Invariants: the guardrails written in the ledger, enforced by code outside any model.

The article's three sentences (and close variants) are understood as written:
  "never run cutover on a db whose state != verified"   -> a step precondition
  "never touch more than 2 dbs concurrently"            -> a limit on touched targets
  "pause if error_rate_5m > 0.5%"                        -> a metric threshold
and each has a structured form too:
  {require: {step: cutover, state: verified}}
  {max_touched: 2}
  {pause_if: {metric: error_rate_5m, op: ">", value: 0.5, unit: "%"}}
An invariant that cannot be understood is reported as *unenforced*, never ignored.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.codec.timefmt import age_text, parse_iso
from engine.ledger.compare import OPS, holds
from engine.ledger.model import METRIC_MAX_AGE, Ledger
from engine.ledger.touched import touched

_WORD_OPS = {
    "exceeds": ">",
    "is above": ">",
    "above": ">",
    "is over": ">",
    "over": ">",
    "is greater than": ">",
    "greater than": ">",
    "is below": "<",
    "below": "<",
    "is under": "<",
    "under": "<",
    "is less than": "<",
    "less than": "<",
    "=": "==",
    "is": "==",
}

_PRECONDITION = re.compile(
    r"^\s*never\s+(?:run|do|start|execute|perform)\s+(?:a\s+|the\s+)?(?P<step>[\w.-]+)\s+"
    r"(?:on|for|against)\s+(?:a|an|any|the)?\s*[\w-]+\s+(?:whose|where|with|if\s+its|if\s+the|when\s+its|when\s+the)\s+"
    r"state\s*(?:!=|<>|is\s+not|isn't|is\s+anything\s+but|other\s+than)\s*(?P<state>[\w.-]+?)\s*\.?\s*$",
    re.I,
)
_PRECONDITION_ONLY = re.compile(
    r"^\s*only\s+(?:run|do|start)\s+(?:a\s+|the\s+)?(?P<step>[\w.-]+)\s+(?:on|for|when)\s+.*?state\s*(?:==|=|is)\s*(?P<state>[\w.-]+?)\s*\.?\s*$",
    re.I,
)
_MAX_TOUCHED = re.compile(
    r"^\s*(?:never\s+(?:touch|run|change|work\s+on|have)\s+more\s+than|at\s+most|no\s+more\s+than|never\s+more\s+than)\s+"
    r"(?P<n>\d+)\s+[\w-]+(?:\s+(?:concurrently|at\s+once|at\s+a\s+time|in\s+flight|in\s+parallel|simultaneously|touched))*\s*\.?\s*$",
    re.I,
)
_PAUSE = re.compile(
    r"^\s*pause\s+(?:if|when|whenever)\s+(?P<metric>[A-Za-z_][\w.-]*)\s*"
    r"(?P<op>>=|<=|==|!=|>|<|=|exceeds|is\s+above|above|is\s+over|over|is\s+greater\s+than|greater\s+than|is\s+below|below|is\s+under|under|is\s+less\s+than|less\s+than)\s*"
    r"(?P<value>-?\d+(?:\.\d+)?)\s*(?P<unit>%|percent)?\s*\.?\s*$",
    re.I,
)


@dataclass(frozen=True)
class Invariant:
    """One understood (or not) invariant."""

    text: str
    kind: str  # precondition | max_touched | metric | unenforced
    step: str | None = None
    state: str | None = None
    limit: int | None = None
    metric: str | None = None
    op: str | None = None
    value: float | None = None
    percent: bool = False
    problem: str | None = None

    def condition(self) -> str:
        unit = "%" if self.percent else ""
        return f"{self.metric} {self.op} {self.value:g}{unit}"


@dataclass
class InvariantStatus:
    """The state of one invariant right now."""

    text: str
    kind: str
    status: str  # ok | violated | unknown | unenforced
    value: str
    age: float | None = None
    invariant: Invariant | None = field(default=None, repr=False)
    stale: bool = False  # unknown because the last reading is older than the metric's max_age
    read_at: float | None = None  # epoch time of the metric reading judged (the guard ages it again)

    @property
    def label(self) -> str:
        """`ok`, `violated`, `unknown (stale)`: the status as every front end words it."""
        return f"{self.status} (stale)" if self.stale else self.status


def _norm_op(op: str) -> str:
    op = re.sub(r"\s+", " ", op.strip().lower())
    return _WORD_OPS.get(op, op)


def parse(item: str | dict[str, Any]) -> Invariant:
    """Understand one invariant, or return it as unenforced with the reason."""
    if isinstance(item, dict):
        return _parse_structured(item)
    text = str(item)
    if m := _PRECONDITION.match(text) or _PRECONDITION_ONLY.match(text):
        return Invariant(text, "precondition", step=m["step"], state=m["state"])
    if m := _MAX_TOUCHED.match(text):
        return Invariant(text, "max_touched", limit=int(m["n"]))
    if m := _PAUSE.match(text):
        return Invariant(
            text, "metric", metric=m["metric"], op=_norm_op(m["op"]), value=float(m["value"]), percent=bool(m["unit"])
        )
    return Invariant(
        text,
        "unenforced",
        problem="not understood; write it like the article's sentences or in structured form "
        "({require: {step, state}}, {max_touched: N}, {pause_if: {metric, op, value}})",
    )


def _parse_structured(item: dict[str, Any]) -> Invariant:
    text = ", ".join(f"{k}: {v}" for k, v in item.items())
    try:
        if "max_touched" in item or "max_concurrent" in item:
            limit = int(item["max_touched"] if "max_touched" in item else item["max_concurrent"])
            return Invariant(item.get("text", f"never touch more than {limit} targets concurrently"), "max_touched", limit=limit)
        spec = item.get("require") or item.get("precondition")
        if isinstance(spec, dict) and spec.get("step") and spec.get("state"):
            return Invariant(
                item.get("text", f"never run {spec['step']} on a target whose state != {spec['state']}"),
                "precondition",
                step=str(spec["step"]),
                state=str(spec["state"]),
            )
        spec = item.get("pause_if")
        if isinstance(spec, str):
            parsed = parse(f"pause if {spec}")
            return Invariant(f"pause if {spec}", parsed.kind, metric=parsed.metric, op=parsed.op, value=parsed.value, percent=parsed.percent, problem=parsed.problem)
        if isinstance(spec, dict) and spec.get("metric") and spec.get("value") is not None:
            op = _norm_op(str(spec.get("op", ">")))
            if op not in OPS:
                raise ValueError(f"unknown comparison {spec.get('op')!r}")
            value = str(spec["value"]).strip()
            percent = value.endswith("%") or str(spec.get("unit", "")).strip() in ("%", "percent")
            number = float(value.rstrip("%"))
            inv = Invariant("", "metric", metric=str(spec["metric"]), op=op, value=number, percent=percent)
            return Invariant(item.get("text", f"pause if {inv.condition()}"), "metric", metric=inv.metric, op=op, value=number, percent=percent)
    except (TypeError, ValueError) as err:
        return Invariant(text, "unenforced", problem=f"cannot read it: {err}")
    return Invariant(text, "unenforced", problem="unknown structured invariant; use require, max_touched or pause_if")


# The forms `parse` understands, for people: `handoff check --explain` and docs/ledger.md.
FORMS: tuple[tuple[str, str, str], ...] = (
    ("never run STEP on a TARGET whose state != STATE",
     "{require: {step: STEP, state: STATE}}",
     "the guard refuses STEP on a target anywhere but STATE; also: do/start/execute/perform; "
     "for/against; where/with/if its; is not/isn't/other than; or \"only run STEP when its state is STATE\""),
    ("never touch more than N TARGETS concurrently",
     "{max_touched: N}",
     "at most N targets touched at once (from their first irreversible step until done, or while a step runs); "
     "also: at most N ..., no more than N ...; at once/at a time/in parallel/simultaneously"),
    ("pause if METRIC > VALUE[%]",
     "{pause_if: {metric: METRIC, op: \">\", value: VALUE, unit: \"%\"}}",
     "the session pauses the ledger when metrics.METRIC prints a reading past VALUE; ops: > >= < <= == != "
     "or exceeds/above/over/greater than/below/under/less than; a reading and its threshold must agree on %"),
)

_WORD = r"[A-Za-z_][\w.-]*"
_STOP = frozenset("a an the any on for of to if when whenever whose where with is its it state never only do dont "
                  "don't run start execute perform unless until before after not than more no be and or pause stop "
                  "halt goes rises falls drops exceeds above below over under greater less touch concurrently max "
                  "at most once time same parallel in flight".split())
_CUES = {
    "metric": ("pause", "%", "rate", "error", "latency", "lag", ">", "<", "exceed", "above", "below", "over", "under"),
    "max_touched": ("more than", "at most", "concurrent", "at once", "parallel", "simultaneous", "at a time",
                    "in flight", "touch", "no more"),
    "precondition": ("state", "unless", "whose", "only", "before", "until", "!=", "is not", "isn't"),
}


def closest_form(text: str) -> str:
    """The sentence the engine would understand that is closest to `text`, with the
    names and numbers of `text` kept where they can be found: what to write instead
    of an invariant `parse` reports as unenforced. The result always parses."""
    respelled = _respelled(str(text))
    if respelled is not None:
        return respelled  # a misspelt word or two: the same sentence, spelt right
    lower = str(text).lower()
    words = [w for w in re.findall(_WORD, str(text)) if w.lower() not in _STOP]
    number = re.search(r"(?<![\w.])(-?\d+(?:\.\d+)?)\s*(%|percent)?(?![\w.])", lower)
    value = number.group(1) if number else "1"
    unit = "%" if number and number.group(2) else ""
    named = [w for w in words if "_" in w or any(c.isdigit() for c in w)]
    metric = named[0] if named else (words[0] if words else "error_rate_5m")
    op = next((sym for sym in (">=", "<=", "!=", "==", ">", "<") if sym in lower), None)
    if op is None:
        op = next((_WORD_OPS[w] for w in sorted(_WORD_OPS, key=len, reverse=True) if len(w) > 2 and w in lower), ">")
    count = re.search(r"\b(\d+)\s+(" + _WORD + r")", str(text))
    limit, noun = (count.group(1), count.group(2)) if count else (value.split(".")[0].lstrip("-") or "1", "targets")
    step = words[0] if words else "STEP"
    state = words[-1] if len(words) > 1 else "verified"
    candidates = {
        "metric": f"pause if {metric} {op} {value}{unit}",
        "max_touched": f"never touch more than {limit} {noun} concurrently",
        "precondition": f"never run {step} on a target whose state != {state}",
    }
    cues = {kind: sum(cue in lower for cue in _CUES[kind]) for kind in candidates}
    best = max(candidates, key=lambda kind: (cues[kind], _similar(lower, candidates[kind])))
    # Nothing in the text says which kind it is: show the form itself, not a guess made of its words.
    sentence = candidates[best] if cues[best] else FORMS_EXAMPLES[best]
    if parse(sentence).kind == "unenforced":  # names that the sentence forms cannot hold
        sentence = FORMS_EXAMPLES[best]
    return sentence


_VOCAB = (
    "never run do start execute perform a an any the on for against whose where with if its when state is not "
    "isn't anything but other than only touch change work have more at most no concurrently once time in flight "
    "parallel simultaneously touched pause whenever exceeds above over greater below under less percent"
).split()


def _respelled(text: str) -> str | None:
    """`text` with misspelt sentence words replaced by close ones, if that makes it parse."""
    import difflib
    import itertools

    options = []
    for word in text.split():
        bare = word.lower().strip(".,")
        if bare in _VOCAB or any(c.isdigit() for c in bare) or not bare.isalpha():
            options.append([word])
        else:
            options.append([word, *difflib.get_close_matches(bare, _VOCAB, n=3, cutoff=0.7)])
    for combo in itertools.islice(itertools.product(*options), 256):
        candidate = " ".join(combo)
        if candidate != text and parse(candidate).kind != "unenforced":
            return candidate
    return None


FORMS_EXAMPLES = {
    "precondition": "never run cutover on a target whose state != verified",
    "max_touched": "never touch more than 2 targets concurrently",
    "metric": "pause if error_rate_5m > 0.5%",
}


def _similar(a: str, b: str) -> float:
    from difflib import SequenceMatcher

    return SequenceMatcher(None, a, b.lower()).ratio()


def parse_all(ledger: Ledger) -> list[Invariant]:
    return [parse(item) for item in ledger.invariants]


def unread_text(inv: Invariant) -> str:
    """What every runtime, the guard and the handoff note say of an invariant the engine does not read."""
    return (f'invariant "{inv.text}" is not understood, so it cannot be enforced: nothing starts until it is '
            "written in a form `handoff check --explain` shows")


def max_age_of(ledger: Ledger, metric: str | None) -> float:
    """Seconds a reading of `metric` stays good enough to judge an invariant on."""
    declared = ledger.metrics.get(metric or "")
    return declared.max_age if declared is not None else METRIC_MAX_AGE


def not_enforced(ledger: Ledger, invariants: list[Invariant] | None = None) -> Invariant | None:
    """An invariant the engine does not understand, unless the lease's holder was started
    with --allow-unenforced: nothing starts past it, also one written (or garbled) after a
    run started (a session refuses to start on one)."""
    if ledger.session is not None and ledger.session.allow_unenforced:
        return None
    return next((inv for inv in (parse_all(ledger) if invariants is None else invariants) if inv.kind == "unenforced"), None)


MetricReader = Callable[[str], "tuple[float, bool, float] | None"]
"""name -> (value, is_percent, epoch time read) of the last reading, or None."""


def evaluate(ledger: Ledger, readings: MetricReader | None = None, *, now: float | None = None) -> list[InvariantStatus]:
    """Each invariant: ok / violated / unknown / unenforced, with its current value.

    Runs nothing: metric values come from `readings` (the journal's last reading)."""
    now = time.time() if now is None else now
    out: list[InvariantStatus] = []
    touched_names: list[str] | None = None
    for inv in parse_all(ledger):
        if inv.kind == "unenforced":
            out.append(InvariantStatus(inv.text, inv.kind, "unenforced", inv.problem or "not understood", invariant=inv))
        elif inv.kind == "max_touched":
            if touched_names is None:
                touched_names = touched(ledger)
            n = len(touched_names)
            status = "violated" if n > (inv.limit or 0) else "ok"
            out.append(InvariantStatus(inv.text, inv.kind, status, f"touched {n}/{inv.limit}", invariant=inv))
        elif inv.kind == "precondition":
            bad = [
                name
                for name, t in ledger.targets.items()
                if t.in_flight is not None and t.in_flight.step == inv.step and t.state != inv.state
            ]
            step = ledger.step(inv.step or "")
            if bad:
                out.append(InvariantStatus(inv.text, inv.kind, "violated", f"{inv.step} running on {', '.join(bad)} outside {inv.state}", invariant=inv))
            elif step is not None and step.from_ != inv.state:
                out.append(InvariantStatus(inv.text, inv.kind, "violated", f"runbook step {inv.step} starts from {step.from_}, not {inv.state}", invariant=inv))
            else:
                out.append(InvariantStatus(inv.text, inv.kind, "ok", f"{inv.step} only from {inv.state}", invariant=inv))
        else:
            out.append(_metric_status(inv, ledger, readings, now))
    return out


def _metric_status(inv: Invariant, ledger: Ledger, readings: MetricReader | None, now: float) -> InvariantStatus:
    reading = readings(inv.metric or "") if readings else None
    if reading is None:
        source = "no reading yet" if inv.metric in ledger.metrics else f"no source: add metrics.{inv.metric}.run"
        return InvariantStatus(inv.text, inv.kind, "unknown", f"{inv.metric} {source}", invariant=inv)
    value, percent, at = reading
    age = abs(now - at)  # a reading dated ahead (its host's clock runs fast) is as far from now as one behind
    unit = "%" if percent else ""
    shown = f"{inv.metric} {value:g}{unit} ({age_text(age)} {'ago' if at <= now + 1 else 'ahead of this clock'})"
    max_age = max_age_of(ledger, inv.metric)
    if age > max_age:
        # An old reading proves nothing about now: never call it ok (or violated).
        return InvariantStatus(inv.text, inv.kind, "unknown", f"{shown}: older than max_age {age_text(max_age)}",
                               age, inv, stale=True)
    if percent != inv.percent:
        return InvariantStatus(inv.text, inv.kind, "unknown", f"{shown}: reading and threshold differ in unit", age, inv)
    violated = holds(value, inv.op or ">", inv.value or 0.0)
    return InvariantStatus(inv.text, inv.kind, "violated" if violated else "ok", shown, age, inv, read_at=at)


def journal_readings(journal) -> MetricReader:
    """A MetricReader over the journal's `metric` records (newest wins)."""
    cache: dict[str, tuple[float, bool, float] | None] = {}

    def read(name: str):
        if name not in cache:
            record = journal.last_of("metric", metric=name)
            if record is None or record.get("value") is None:
                cache[name] = None
            else:
                at = parse_iso(record.get("ts")) or time.time()
                cache[name] = (float(record["value"]), bool(record.get("percent")), at)
        return cache[name]

    return read
