"""Comparison operators: the one table that `until` conditions and invariant thresholds use."""

from __future__ import annotations

import operator
from collections.abc import Callable

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def holds(value: float, op: str, threshold: float) -> bool:
    """`value OP threshold`; KeyError for an operator not in OPS."""
    return OPS[op](value, threshold)
