"""`numbers.holds` (does a target's data hold a number that keeps its spelling?) gives what
the plain recursive definition gives, for any nesting of the values a ledger holds: it
decides which targets the parse cache may carry as JSON."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.codec.numbers import SrcFloat, SrcInt, holds


def reference(value: Any) -> bool:
    if isinstance(value, (SrcFloat, SrcInt)):
        return True
    if isinstance(value, dict):
        return any(reference(v) for v in value.values())
    if isinstance(value, list):
        return any(reference(v) for v in value)
    return False


leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                   st.sampled_from(["1.30", "1e3", ".5"]).map(SrcFloat), st.sampled_from(["+5", "-0", "007"]).map(SrcInt))
values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=3), inner, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(values)
def test_holds_is_the_recursive_definition(value: Any) -> None:
    assert holds(value) is reference(value)


def test_a_spelled_number_deep_in_a_target_is_found() -> None:
    assert holds({"evidence": {"readings": [1, 2.0, {"lag": SrcFloat("1.30")}]}, "state": "done"})
    assert not holds({"evidence": {"readings": [1, 2.0, {"lag": 1.3}]}, "state": "done", "ok": True, "x": None})
