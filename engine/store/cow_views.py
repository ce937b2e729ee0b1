"""Read-through views of a shared target, which copy it the moment anything changes.

A transaction reads many targets and changes one or two. `CowTargets` (engine.store.cow)
hands out a `ModelView` for a target it has not copied: reading through it reads the
readers' shared object, and every way of changing it (an attribute set or deleted, a
list or dict changed in place, at any depth) first deep-copies the whole target into the
transaction, then makes the change on the copy. Nested views remember which shared
object they stand for and find its copy through the deep copy's memo, so a view taken
before the copy (`a = t.approvals[0]`) still means the same approval after it.

A view is not identity-stable: every read hands out a new view object, so code inside
a transaction compares models by what they hold (`==`, or their key fields), never `is`.

What a view never does is hand out a mutable shared object: immutable scalars are
returned as they are, models, lists and dicts as views, and anything else (a method, a
set, `__dict__`) is taken from the copy, which is made first. That is the fence; the
property tests in tests/unit/test_cow_props.py change targets through every path.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_IMMUTABLE = (str, int, float, bool, type(None), bytes)
# Methods that only read: called on the shared object, no copy needed.
_READERS = frozenset({"model_dump", "model_dump_json"})


class Root:
    """One shared target in one transaction: made a private copy at the first change."""

    __slots__ = ("owner", "name", "shared", "copy", "memo", "detached")

    def __init__(self, owner: Any, name: str, shared: BaseModel) -> None:
        self.owner, self.name, self.shared = owner, name, shared
        self.copy: BaseModel | None = None
        self.memo: dict[int, Any] = {}
        self.detached = False  # replaced or removed in the dict: a change stays private

    def materialize(self) -> BaseModel:
        if self.copy is None:
            self.memo = {}
            self.copy = copy.deepcopy(self.shared, self.memo)
            if not self.detached:
                self.owner._adopt(self.name, self.copy)
        return self.copy

    def resolve(self, obj: Any, shared: bool) -> Any:
        """The object a view means now: the shared one, or its copy once there is one."""
        if not shared or self.copy is None:
            return obj
        return self.memo[id(obj)] if obj is not self.shared else self.copy


def wrap(root: Root, value: Any, shared: bool) -> Any:
    """What a read hands out: the value itself if immutable, else a view of it."""
    if isinstance(value, _IMMUTABLE):
        return value
    if isinstance(value, BaseModel):
        return ModelView(root, value, shared)
    if isinstance(value, list):
        return ListView(root, value, shared)
    if isinstance(value, dict):
        return DictView(root, value, shared)
    return _NOT_SAFE


_NOT_SAFE = object()  # marker: the value must be read from the copy


def unwrap(value: Any) -> Any:
    """A value about to be stored: views become private deep copies of what they show."""
    if isinstance(value, _View):
        return copy.deepcopy(value._target())
    if isinstance(value, list) and any(_holds_view(v) for v in value):
        return [unwrap(v) for v in value]
    if isinstance(value, dict) and any(_holds_view(v) for v in value.values()):
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, tuple) and any(_holds_view(v) for v in value):
        return tuple(unwrap(v) for v in value)
    return value


def _holds_view(value: Any) -> bool:
    if isinstance(value, _View):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_view(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_view(v) for v in value.values())
    return False


class _View:
    """Common machinery: which object, in which transaction, and the copy on change."""

    __slots__ = ("_root", "_obj", "_shared")
    _root: Root
    _obj: Any
    _shared: bool

    def __init__(self, root: Root, obj: Any, shared: bool) -> None:
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_shared", shared)

    def _target(self) -> Any:
        return self._root.resolve(self._obj, self._shared)

    def _writable(self) -> Any:
        self._root.materialize()
        return self._target()

    def _wrap(self, value: Any) -> Any:
        shared = self._shared and self._root.copy is None
        out = wrap(self._root, value, shared)
        if out is _NOT_SAFE and shared:  # a set, a tuple of lists...: its twin in the copy
            self._root.materialize()
            return self._root.memo.get(id(value), value)  # not in the memo: deepcopy kept it (atomic)
        return value if out is _NOT_SAFE else out

    # isinstance(view, Target) holds, as for the object it shows; a read-only `__class__`
    # is exactly what is meant (object's is assignable), which mypy cannot be told otherwise.
    @property  # type: ignore[misc]
    def __class__(self):
        return type(self._target())

    def __eq__(self, other: Any) -> bool:
        return self._target() == (other._target() if isinstance(other, _View) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._target())

    def __str__(self) -> str:
        return str(self._target())

    def __copy__(self) -> Any:  # a shallow copy would share nested objects: always deep
        return copy.deepcopy(self._target())

    def __deepcopy__(self, memo: dict) -> Any:
        return copy.deepcopy(self._target(), memo)


class ModelView(_View):
    """A pydantic model (a target, its in_flight, an approval), read through."""

    __slots__ = ()

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target(), attr)
        if attr in _READERS:
            return value
        if isinstance(value, (_IMMUTABLE, BaseModel, list, dict)):
            return self._wrap(value)
        return getattr(self._writable(), attr)  # a method or an object we cannot vouch for: from the copy

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._writable(), attr, unwrap(value))

    def __delattr__(self, attr: str) -> None:
        delattr(self._writable(), attr)

    def __iter__(self):
        for key, value in self._target():
            yield key, self._wrap(value)


def _mutator(name: str):
    def method(self, *args: Any, **kw: Any) -> Any:
        return getattr(self._writable(), name)(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kw.items()})
    method.__name__ = name
    return method


class ListView(_View):
    """A list inside a target (approvals, an argv, a list in an extra field)."""

    __slots__ = ()

    def __len__(self) -> int:
        return len(self._target())

    def __bool__(self) -> bool:
        return bool(self._target())

    def __iter__(self):
        return iter([self._wrap(v) for v in self._target()])

    def __reversed__(self):
        return iter([self._wrap(v) for v in reversed(self._target())])

    def __getitem__(self, index: Any) -> Any:
        value = self._target()[index]
        return [self._wrap(v) for v in value] if isinstance(index, slice) else self._wrap(value)

    def __contains__(self, value: Any) -> bool:
        return unwrap(value) in self._target()

    def index(self, value: Any, *args: Any) -> int:
        return self._target().index(unwrap(value), *args)

    def count(self, value: Any) -> int:
        return self._target().count(unwrap(value))

    def copy(self) -> list:
        return [self._wrap(v) for v in self._target()]

    def __add__(self, other: Any) -> list:
        return self.copy() + list(other)

    def __iadd__(self, other: Any) -> ListView:
        self._writable().extend(unwrap(list(other)))
        return self

    def __imul__(self, n: int) -> ListView:
        self._writable().__imul__(n)
        return self

    append, extend, insert, pop = _mutator("append"), _mutator("extend"), _mutator("insert"), _mutator("pop")
    remove, clear, sort, reverse = _mutator("remove"), _mutator("clear"), _mutator("sort"), _mutator("reverse")
    __setitem__, __delitem__ = _mutator("__setitem__"), _mutator("__delitem__")


class DictView(_View):
    """A dict inside a target (an extra field holding a mapping)."""

    __slots__ = ()

    def __len__(self) -> int:
        return len(self._target())

    def __bool__(self) -> bool:
        return bool(self._target())

    def __iter__(self):
        return iter(list(self._target()))

    def __contains__(self, key: Any) -> bool:
        return key in self._target()

    def __getitem__(self, key: Any) -> Any:
        return self._wrap(self._target()[key])

    def get(self, key: Any, default: Any = None) -> Any:
        target = self._target()
        return self._wrap(target[key]) if key in target else default

    def keys(self) -> list:
        return list(self._target())

    def values(self) -> list:
        return [self._wrap(v) for v in self._target().values()]

    def items(self) -> list:
        return [(k, self._wrap(v)) for k, v in self._target().items()]

    def copy(self) -> dict:
        return dict(self.items())

    def __ior__(self, other: Any) -> DictView:
        self._writable().update(unwrap(dict(other)))
        return self

    pop, popitem, setdefault, update = _mutator("pop"), _mutator("popitem"), _mutator("setdefault"), _mutator("update")
    clear, __setitem__, __delitem__ = _mutator("clear"), _mutator("__setitem__"), _mutator("__delitem__")
