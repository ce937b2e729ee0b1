"""Between the document's plain data and the pydantic model, with errors that point at lines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.codec import strict
from engine.codec.splice import Change
from engine.errors import LedgerInvalid
from engine.ledger.model import Ledger, Target


def to_ledger(data: Any, path: str, text: str) -> Ledger:
    """Validate; a problem is reported at the line of the offending key."""
    if not isinstance(data, dict):
        raise LedgerInvalid("the ledger must be a mapping (task:, targets:, ...)", path=path, line=1, column=1)
    try:
        return Ledger.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        loc = tuple(first.get("loc", ()))
        message = first.get("msg", "invalid value")
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        where = ".".join(str(p) for p in loc)
        line = column = None
        if not loc and isinstance(data.get("targets"), dict):
            # A whole-ledger check (an unknown state, a name nobody can type) names its target: point at it.
            for name in data["targets"]:
                if message.startswith(f"target {str(name)!r} "):
                    loc = ("targets", name, "state") if f"target {str(name)!r} is in state" in message else ("targets", name)
                    break
        # A missing field is reported at the mapping that lacks it.
        at = loc[:-1] if first.get("type") == "missing" else loc
        if at:
            # Errors are rare: pay for a full compose to find the line.
            node = strict.node_at(strict.compose(text, path), _doc_path(data, at))
            line, column = node.start_mark.line + 1, node.start_mark.column + 1
        else:
            line, column = 1, 1
        if first.get("type") == "missing":
            message = f"`{where}` is required" if where else message
        elif where:
            message = f"{where}: {message}"
        more = len(err.errors()) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise LedgerInvalid(message + "; fix it and save again", path=path, line=line, column=column) from None


def to_ledger_reusing(data: Any, path: str, text: str, lines: dict[str, str], known: dict[str, Target]) -> Ledger:
    """Like `to_ledger`, but a target whose line text is in `known` (from the last read)
    reuses that validated Target: a reader re-reading a 10,000-target ledger after one
    target changed validates one target, not 10,000. Readers never mutate these."""
    targets = data.get("targets") if isinstance(data, dict) else None
    if not known or not isinstance(targets, dict):
        return to_ledger(data, path, text)
    try:
        built: dict[str, Target] = {}
        for name, value in targets.items():
            line = lines.get(name)
            target = known.get(line) if line is not None else None
            built[str(name)] = target if target is not None else Target.model_validate({} if value is None else value)
        ledger = Ledger.model_validate({**data, "targets": {}})
        ledger.targets = built
        ledger.check_states()
    except (ValidationError, ValueError):
        return to_ledger(data, path, text)  # the slow path knows how to point at the line
    return ledger


def check_states(before: Ledger, after: Ledger, names: Iterable[str] | None) -> None:
    """A write's targets are in states the ledger declares (ValueError if not): those in
    `names` (all when None), or every target when the write took a declared state away (a
    runbook step removed): an untouched target may be in it, and the file would no longer load."""
    after.check_states(names if after.states() >= before.states() else None)


def change(before: Ledger, after: Ledger, names: set[str] | None = None) -> Change:
    """What a transaction changed, as the document writer needs it: the model's data
    before and after, all of the top level and the targets in `names` (all when None)."""
    if names is None:
        names = set(before.targets) | set(after.targets)
    return Change(
        top_data(before),
        top_data(after),
        {n: target_data(before.targets[n]) for n in names if n in before.targets},
        {n: target_data(t) for n, t in after.targets.items() if n in names}
        if any(n not in before.targets for n in names)  # an added target: keep the model's order
        else {n: target_data(after.targets[n]) for n in names if n in after.targets},
    )


def _doc_path(data: dict, loc: tuple) -> tuple:
    """Pydantic's error location without its model-internal parts (union tags, aliases)."""
    out = []
    node: Any = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        elif part == "from_" and isinstance(node, dict) and "from" in node:
            out.append("from")
            node = node["from"]
    return tuple(out)


def _keep_null_extras(model: BaseModel, data: dict[str, Any]) -> None:
    """Put back the unknown keys a human set to null (`exclude_none` drops them; the
    engine never drops what a human wrote). Walks nested models too."""
    extra = model.__pydantic_extra__
    if extra:
        for key, value in extra.items():
            if value is None:
                data[key] = None
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if value is None:
            continue
        out = data.get(info.alias or name)
        if isinstance(value, BaseModel) and isinstance(out, dict):
            _keep_null_extras(value, out)
        elif isinstance(value, list) and isinstance(out, list):
            for item, dumped in zip(value, out, strict=False):  # a list may mix models and plain values (`approvers`)
                if isinstance(item, BaseModel) and isinstance(dumped, dict):
                    _keep_null_extras(item, dumped)
        elif isinstance(value, dict) and isinstance(out, dict):
            for key, item in value.items():
                if isinstance(item, BaseModel) and isinstance(out.get(key), dict):
                    _keep_null_extras(item, out[key])


def target_data(target: Target) -> dict[str, Any]:
    """One target as the document writes it: no empty fields."""
    data = target.model_dump(by_alias=True, exclude_none=True)
    if not data.get("approvals"):
        data.pop("approvals", None)
    # Cheap check first: most targets have no unknown keys and no nested models.
    if (
        target.__pydantic_extra__
        or (target.evidence is not None and target.evidence.__pydantic_extra__)
        or (target.in_flight is not None and target.in_flight.__pydantic_extra__)
        or any(a.__pydantic_extra__ for a in target.approvals)
    ):
        _keep_null_extras(target, data)
    return data


def top_data(ledger: Ledger) -> dict[str, Any]:
    """Everything but the targets as plain data, in canonical order."""
    data = ledger.model_dump(by_alias=True, exclude_none=True, exclude={"targets"})
    for key in ("invariants", "notify", "metrics", "redact"):
        if not data.get(key):
            data.pop(key, None)
    for name, metric in ledger.metrics.items():
        # A default max_age is not written back: an engine write must not add lines nobody wrote.
        if "max_age" not in metric.model_fields_set and name in data.get("metrics", {}):
            data["metrics"][name].pop("max_age", None)
    if "runbook" in data and not data["runbook"].get("states"):
        data["runbook"].pop("states", None)
    if data.get("session") is not None and not data["session"].get("stop_requested"):
        data["session"].pop("stop_requested", None)
    top = ledger.model_copy(update={"targets": {}})
    _keep_null_extras(top, data)
    return data


def to_data(ledger: Ledger) -> dict[str, Any]:
    """The whole ledger as plain data, in canonical order."""
    data = top_data(ledger)
    data["targets"] = {name: target_data(t) for name, t in ledger.targets.items()}
    return data
