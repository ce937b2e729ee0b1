"""A strict YAML loader: libyaml's parser with our own resolver and refusals.

Refused, with file:line:col and what to do: aliases (billion laughs), nesting past
MAX_DEPTH, duplicate keys at any level, explicit tags. Resolved as in YAML 1.2's core
schema, not 1.1: `no`, `on`, `012`, `12:30:00`, `0/9A3F2C10` and timestamps stay
strings; only true/false, null/~, decimal integers and decimal floats are not.
Mapping keys are always their source text (`1.10:` is the name "1.10", not 1.1, and it
is not a duplicate of `1.1:`); numbers remember their spelling (`engine.codec.numbers`).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

from engine.codec.hints import brace_hint, tab_hint
from engine.codec.numbers import make_float, make_int
from engine.errors import LedgerInvalid

MAX_DEPTH = 32

try:  # libyaml's parser is 10-20x faster than the pure-Python one
    from yaml._yaml import CParser as _Parser  # where yaml.cyaml takes it from (its stub does not re-export it)
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _Parser = yaml.parser.Parser  # type: ignore[misc,assignment]  # the other base of the same loader: mypy types one branch

BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")
FLOAT = re.compile(r"^[-+]?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$")

STR_TAG = "tag:yaml.org,2002:str"
_ALLOWED_TAGS = {
    STR_TAG,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


class CoreResolver(BaseResolver):
    """YAML 1.2 core-schema implicit types, nothing more."""


CoreResolver.add_implicit_resolver("tag:yaml.org,2002:bool", BOOL, list("tTfF"))
CoreResolver.add_implicit_resolver("tag:yaml.org,2002:null", NULL, ["~", "n", "N", ""])
CoreResolver.add_implicit_resolver("tag:yaml.org,2002:int", INT, list("-+0123456789"))
CoreResolver.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT, list("-+.0123456789"))


# Keys whose values are always text, whatever they look like: approval hashes and intent
# tokens are hex digits, and a hex string such as `90118711690768e1` or `1234567890123456`
# reads as a number to YAML. They are read as their source text, never coerced back.
TEXT_KEYS = frozenset({"hash", "token", "approval_hash"})
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})


class StrictConstructor(SafeConstructor):
    """SafeConstructor that refuses duplicate keys instead of keeping the last one, reads
    keys as their source text and numbers with their spelling."""

    line_offset = 0  # set when the text is a piece of a file (see `compose`)

    def construct_mapping(self, node, deep=False):  # noqa: D401 - PyYAML hook
        seen: dict[Any, Any] = {}
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            # A key is a name a person typed: `1.10`, `no` and `null` are names, as written.
            key = key_node.value if isinstance(key_node, ScalarNode) else self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise ConstructorError(None, None, "a mapping key must be a plain value", key_node.start_mark) from None
            if key in seen:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first at line {seen[key].line + 1 + self.line_offset}); "
                    "YAML would silently keep only the last one: remove or rename one of them",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
            if key in TEXT_KEYS and isinstance(value_node, ScalarNode) and value_node.tag in _NUMBER_TAGS:
                mapping[key] = value_node.value  # `hash: 90118711690768e1` (PyYAML writes it bare) is text
            else:
                mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node):  # noqa: D401 - PyYAML hook
        try:
            return make_int(node.value)
        except ValueError:  # past Python's digit limit for int(): say where, in our words
            raise ConstructorError(None, None, f"a number with {len(node.value)} digits is too long; "
                                   "quote it if it is text", node.start_mark) from None

    def construct_yaml_float(self, node):  # noqa: D401 - PyYAML hook
        try:
            return make_float(node.value)
        except ValueError as err:  # infinite: said where, with what to do
            raise ConstructorError(None, None, f"{err}; write a finite number, or quote it if it is text",
                                   node.start_mark) from None


# types-PyYAML types a hook's `self` as a whole Loader; PyYAML calls it on the constructor it is added to.
StrictConstructor.add_constructor("tag:yaml.org,2002:int", StrictConstructor.construct_yaml_int)  # type: ignore[type-var]
StrictConstructor.add_constructor("tag:yaml.org,2002:float", StrictConstructor.construct_yaml_float)  # type: ignore[type-var]


class StrictLoader(_Parser, StrictConstructor, CoreResolver):
    """The loader: parser (libyaml if available), strict constructor, core resolver."""

    def __init__(self, stream):
        if _Parser is yaml.parser.Parser:  # pure-Python fallback needs its own pieces
            # Mixed in by hand (as yaml.Loader does): the stubs type each `self` as that piece alone.
            yaml.reader.Reader.__init__(self, stream)  # type: ignore[arg-type]
            yaml.scanner.Scanner.__init__(self)  # type: ignore[arg-type]
            yaml.parser.Parser.__init__(self)  # type: ignore[arg-type]
            yaml.composer.Composer.__init__(self)  # type: ignore[arg-type]
        else:
            _Parser.__init__(self, stream)
        StrictConstructor.__init__(self)
        CoreResolver.__init__(self)


def _check_tree(root, path: str, line_offset: int = 0, depth_offset: int = 0) -> None:
    """Refuse aliases (a node reached twice), explicit tags and deep nesting."""
    seen: set[int] = set()
    stack = [(root, 1 + depth_offset)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise _invalid(
                path,
                node.start_mark,
                "uses a YAML anchor/alias; aliases are refused (they can blow up a "
                "ledger's size); write the value out in full",
                line_offset,
            )
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise _invalid(path, node.start_mark, f"is nested more than {MAX_DEPTH} levels deep; flatten it", line_offset)
        if node.tag not in _ALLOWED_TAGS:
            raise _invalid(path, node.start_mark, f"uses the explicit tag {node.tag!r}; remove it (plain values only)", line_offset)
        if isinstance(node, MappingNode):
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
        elif isinstance(node, SequenceNode):
            for item in node.value:
                stack.append((item, depth + 1))


_OPENERS = {"while parsing a flow sequence": "`[`", "while parsing a flow mapping": "`{`"}


def _invalid(path: str, mark, message: str, line_offset: int = 0) -> LedgerInvalid:
    line = mark.line + 1 + line_offset if mark is not None else None
    column = mark.column + 1 if mark is not None else None
    return LedgerInvalid(message, path=path, line=line, column=column)


def compose(text: str, path: str, line_offset: int = 0, depth_offset: int = 0):
    """Parse to a checked node tree (None for an empty document).

    `line_offset`: `text` is a piece of a file starting after that many lines; errors
    name the file's line. `depth_offset`: how deep in the file the piece's root sits."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "YAML syntax error"
        opened = _OPENERS.get(err.context or "")
        hint = brace_hint(text, err) or tab_hint(text, err)
        if opened and not hint and err.context_mark is not None and err.problem_mark is not None:
            # An unclosed bracket is found only where the parser gives up, maybe the end
            # of the file: the line to fix is where it opens.
            at = err.problem_mark.line + 1 + line_offset
            raise _invalid(path, err.context_mark, f"this {opened} is never closed (at line {at}: {problem}); "
                           f"close it, or quote the value if the bracket is text", line_offset) from None
        advice = hint or "fix the YAML syntax there"
        raise _invalid(path, mark, f"{problem}; {advice}", line_offset) from None
    except yaml.YAMLError as err:
        raise LedgerInvalid(f"not valid YAML: {err}", path=path) from None
    except RecursionError:
        raise LedgerInvalid(f"nested more than {MAX_DEPTH} levels deep; flatten it", path=path) from None
    finally:
        loader.dispose()
    if node is not None:
        _check_tree(node, path, line_offset, depth_offset)
    return node


def construct(node, path: str, line_offset: int = 0) -> Any:
    """Build Python values from a checked node tree."""
    if node is None:
        return None
    loader = StrictLoader("")
    loader.line_offset = line_offset
    try:
        return loader.construct_document(node)
    except ConstructorError as err:
        raise _invalid(path, err.problem_mark, err.problem or "cannot read this value", line_offset) from None
    except (ValueError, TypeError) as err:
        raise _invalid(path, node.start_mark, f"cannot read a value: {err}", line_offset) from None
    finally:
        loader.dispose()


def load(text: str, path: str, line_offset: int = 0, depth_offset: int = 0) -> Any:
    """compose + construct: the strict loader in one call."""
    return construct(compose(text, path, line_offset, depth_offset), path, line_offset)


def node_at(root, keys: tuple) -> Any:
    """The node at a key path (for pointing a validation error at its line), or the nearest parent."""
    node = root
    for key in keys:
        nxt = None
        if isinstance(node, MappingNode):
            for k, v in node.value:
                if isinstance(k, ScalarNode) and k.value == str(key):
                    nxt = v
                    break
        elif isinstance(node, SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        if nxt is None:
            return node
        node = nxt
    return node


_core_resolver = CoreResolver()
_default_resolver = yaml.resolver.Resolver()
# PyYAML's `resolve` tries only the implicit resolvers registered for a plain scalar's
# first character (and wildcard ones, and path resolvers, which neither schema has): a
# text starting with any other character (`db-18`, a checkpoint's `C/...`) stays a string.
_RESOLVERS = (_core_resolver, _default_resolver)
_TYPED_FIRST = frozenset().union(*(r.yaml_implicit_resolvers for r in _RESOLVERS))
_FIRST_DECIDES = None not in _TYPED_FIRST and not any(r.yaml_path_resolvers for r in _RESOLVERS)


def is_plain_string(text: str) -> bool:
    """True when `text` written plain reads back as the same string, for us and for YAML 1.1 tools."""
    if _FIRST_DECIDES and text and text[0] not in _TYPED_FIRST:
        return True
    ours = _core_resolver.resolve(ScalarNode, text, (True, False))
    theirs = _default_resolver.resolve(ScalarNode, text, (True, False))
    return ours == STR_TAG and theirs == STR_TAG
