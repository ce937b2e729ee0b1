"""The ledger's JSON Schema (`handoff schema`), as close as JSON Schema can say to
what the engine accepts.

Pydantic writes most of it from the model. Two things it cannot see are added here,
both read from the model itself so a new field carries them too: a model whose
config turns numbers into text (`Target`: `checkpoint: 42`) and the fields a
`_scalar_text` validator turns into text (`task: 2026`) accept numbers as well.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from engine.ledger.model import Ledger

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def ledger_schema() -> dict[str, Any]:
    """The schema editors validate a ledger against."""
    schema = Ledger.model_json_schema(by_alias=True)
    for model in _models(Ledger):
        props = schema if model is Ledger else schema.get("$defs", {}).get(model.__name__)
        if props is None:
            continue
        widen = set()
        if model.model_config.get("coerce_numbers_to_str"):
            widen |= set(model.model_fields)
        for decorator in model.__pydantic_decorators__.field_validators.values():
            if decorator.cls_var_name == "_scalar_text":
                widen |= set(decorator.info.fields)
        for name in widen:
            info = model.model_fields[name]
            field = props.get("properties", {}).get(info.alias or name)
            if field is not None:
                _allow_numbers(field)
    out = {"$schema": DRAFT, **schema}
    out["title"] = "handoff ledger (format v1)"
    return out


def _allow_numbers(field: dict[str, Any]) -> None:
    """Where a field takes a string, let it take a number too."""
    if field.get("type") == "string":
        field["type"] = ["string", "number"]
    for option in field.get("anyOf", []):
        if option.get("type") == "string":
            option["type"] = ["string", "number"]


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every model class reachable from its fields."""
    found: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop()
        if model in found:
            continue
        found.append(model)
        for info in model.model_fields.values():
            todo.extend(_model_types(info.annotation))
    return found


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        out.extend(_model_types(arg))
    return out
