"""Property tests: any ledger survives an engine write and read, unknown keys and all,
and the fast reader agrees with the strict YAML loader on everything the emitter writes."""

from __future__ import annotations

import os
import tempfile

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.codec import strict
from engine.codec.canonical import emit_document
from engine.codec.document import parse_document
from engine.codec.fast import FastReader
from engine.codec.splice import Change, splice
from engine.codec.textsafe import CONTROL_CODES
from engine.errors import LedgerInvalid
from engine.ledger.model import BASE_STATES
from engine.store.convert import to_data
from engine.store.file import FileStore
from tests.unit.hand_written import NAMES, STRINGS

# Every code point YAML can carry in a double-quoted scalar (json escapes the rest);
# surrogates cannot be encoded as UTF-8 at all, so they are left out.
_CHARS = st.characters(blacklist_categories=("Cs",))
TRICKY = st.sampled_from(
    ["no", "on", "off", "yes", "012", "0x1F", "12:30:00", "0/9A3F2C10", "~", "null", "true", "1e3", "-", "- x",
     "a: b", "#x", "x #y", "'q'", '"dq"', "back\\slash", "tab\tin", "line\nbreak", "\x00nul", "\x1b[31mred", "é", "😀",
     "\u2028", "\ufeff", " lead", "trail ", "", "[", "{a: 1}", "*alias", "&anchor", "!tag", "%", "@", "`", "|", ">"]
)
TEXT = st.one_of(TRICKY, st.text(_CHARS, max_size=40), st.text(_CHARS, min_size=150, max_size=400))
KEY = st.one_of(TRICKY, st.text(_CHARS, min_size=1, max_size=20))
# A target's or a step's name: one a person can see and type (the engine refuses the others, engine.ledger.model).
NAME = KEY.filter(lambda s: s.strip() != "" and not all(c.isspace() or ord(c) in CONTROL_CODES for c in s))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63), st.floats(allow_nan=False, allow_infinity=False), TEXT)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEY, inner, max_size=4)),
    max_leaves=12,
)
KNOWN_TARGET = {"state", "checkpoint", "last_action", "next_action", "verified_at", "reason", "changed_at", "touched_at",
                "in_flight", "awaiting", "awaiting_by", "awaiting_started_by", "awaiting_started_as", "awaiting_since",
                "approvals", "evidence"}
KNOWN_TOP = {"task", "owner_shift", "started", "environment", "revision", "paused", "session", "budget", "invariants",
             "approvers", "notify", "metrics", "redact", "runbook", "targets", "handoff_note", "handoff_note_by",
             "handoff_note_at"}


def _unknown(known: set[str]):
    return st.dictionaries(KEY.filter(lambda k: k not in known), VALUE, max_size=3)


@st.composite
def targets(draw):
    target = {"state": draw(st.sampled_from(BASE_STATES))}
    for name in ("checkpoint", "last_action", "next_action", "verified_at", "reason", "awaiting_by"):
        if draw(st.booleans()):
            target[name] = draw(TEXT)
    if draw(st.booleans()):
        target["evidence"] = {"step": draw(TEXT), "exit_code": draw(st.integers(-255, 255)), "duration": draw(st.floats(0, 1e6))}
    if draw(st.integers(0, 3)) == 0:
        target["approvals"] = [{"by": draw(TEXT), "user": draw(TEXT), "at": draw(TEXT), "step": draw(TEXT), "hash": draw(TEXT)}]
    target.update(draw(_unknown(KNOWN_TARGET)))
    return target


@st.composite
def ledgers(draw):
    data = {"task": draw(TEXT), "targets": draw(st.dictionaries(NAME, targets(), max_size=6))}
    if draw(st.booleans()):
        data["handoff_note"] = draw(TEXT)
    if draw(st.booleans()):
        data["started"] = draw(TEXT)
    if draw(st.booleans()):
        data["invariants"] = draw(st.lists(TEXT, max_size=3))
    data.update(draw(_unknown(KNOWN_TOP)))
    return data


def _store_round_trip(data: dict) -> dict:
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "l.yaml")
    text, _ = emit_document(data)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    store = FileStore(path)
    store.transact(lambda ledger: None)
    return to_data(FileStore(path).read())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers())
def test_emit_then_parse_returns_the_same_data(data):
    """Whatever a ledger holds (tricky names, control characters, unknown keys, nesting), emit + parse returns it exactly."""
    text, _ = emit_document(data)
    assert parse_document(text, "l.yaml").data == data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers())
def test_store_write_and_read_keeps_every_field_and_unknown_key(data):
    """Through the store (model validation, transaction, atomic write), every field and unknown key comes back."""
    after = _store_round_trip(data)
    assert after.pop("revision") == 1
    expected = dict(data)
    assert after["targets"] == expected.pop("targets")
    for key, value in expected.items():
        if value is not None and value != []:
            assert after[key] == value, key


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers())
def test_fast_reader_agrees_with_the_strict_loader(data):
    """On every document the emitter writes, the fast path (`parse_document`) and `strict.load` read the same thing."""
    text, _ = emit_document(data)
    assert parse_document(text, "l.yaml").data == strict.load(text, "l.yaml")


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(KEY, targets(), min_size=1, max_size=4), st.data())
def test_unchanged_targets_keep_their_text_when_one_changes(targets_, draw):
    """Splicing one changed target into a document leaves every other target's lines byte for byte."""
    data = {"task": "t", "targets": targets_}
    text, lines = emit_document(data)
    parsed = parse_document(text, "l.yaml")
    name = draw.draw(st.sampled_from(sorted(targets_)))
    new_target = {**targets_[name], "reason": "changed"}
    change = Change({"task": "t"}, {"task": "t"}, {name: targets_[name]}, {name: new_target})
    new_text = splice(parsed, change).text
    for other, line in lines.items():
        if other != name:
            assert line in new_text
    changed = {**parsed.data, "targets": {**parsed.data["targets"], name: new_target}}
    assert parse_document(new_text, "l.yaml").data == changed


COMMENT = st.sampled_from(["# c", "#", "# {a: 1}, \"q\" 'x'", "# } # }", "# é"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.lists(COMMENT, min_size=1, max_size=5), st.data())
def test_fast_reader_agrees_with_the_strict_loader_on_commented_targets(data, comments, draw):
    """Comments at the end of the emitter's target lines and between them (quotes, braces and `#` in them): both readers agree."""
    text, _ = emit_document(data)
    out = []
    inside = False  # in the targets block (block scalars elsewhere start lines with spaces too)
    for i, line in enumerate(text.split("\n")):
        inside = line == "targets:" or (inside and line.startswith("  "))
        if not inside or line == "targets:":
            out.append(line)
            continue
        comment = comments[i % len(comments)]
        if line.endswith("}") and draw.draw(st.booleans()):
            line = f"{line}{' ' * draw.draw(st.integers(1, 3))}{comment}"
        out.append(line)
        if draw.draw(st.integers(0, 3)) == 0:
            out.append(draw.draw(st.sampled_from(["", f"  {comment}", comment])))
    commented = "\n".join(out)
    assert parse_document(commented, "l.yaml").data == strict.load(commented, "l.yaml") == data


# What a script puts in a ledger: field names, and values that are mostly plain text, with
# the shapes that make PyYAML quote, wrap or type a value among them.
_WORDY = st.text(st.sampled_from("abz09 .,:-_/'\"#[]{}!&*?|>%@`é\t\n"), max_size=30)
_PLAIN_VALUE = st.one_of(st.sampled_from(STRINGS), TRICKY, _WORDY, st.none(), st.booleans(), st.integers(-10**6, 10**20),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(_CHARS, min_size=70, max_size=120))
_FIELD = st.from_regex(r"[a-z_][a-z0-9_-]{0,8}", fullmatch=True)
_SCRIPT_VALUE = st.recursive(_PLAIN_VALUE, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.one_of(_FIELD, st.sampled_from(["hash", "token"])), inner, max_size=3)),
    max_leaves=8)
_SCRIPT_TARGET = st.dictionaries(st.one_of(st.sampled_from(sorted(KNOWN_TARGET)), _FIELD), _SCRIPT_VALUE, min_size=1,
                                 max_size=6)


@st.composite
def script_ledgers(draw):
    names = st.one_of(st.sampled_from(NAMES), st.from_regex(r"[a-z][a-z0-9.-]{0,10}", fullmatch=True))
    return {"task": "t", "targets": draw(st.dictionaries(names, _SCRIPT_TARGET, min_size=1, max_size=6))}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(script_ledgers(), ledgers()), st.sampled_from([False, None]), st.booleans(), st.sampled_from([2, 4]))
def test_fast_reader_agrees_with_the_strict_loader_on_what_pyyaml_writes(data, flow, unicode, indent):
    """A ledger a script wrote with PyYAML (block style, its quoting, its wrapping of long
    text, its `[]` and `{}`): both readers agree, and it is what the script wrote."""
    text = yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=flow, allow_unicode=unicode,
                     indent=indent)
    try:
        expected = strict.load(text, "l.yaml")
    except LedgerInvalid:
        with pytest.raises(LedgerInvalid):
            parse_document(text, "l.yaml")
        return
    assert parse_document(text, "l.yaml").data == expected


def test_the_fast_reader_takes_a_pyyaml_written_fleet():
    """The targets of a fleet a script dumped with PyYAML are read without the YAML loader."""
    targets = {f"db-{i}": {"state": "done", "checkpoint": f"{i:X}/5D9DC9F8", "last_action": "cutover done, app pointed at pg16",
                           "verified_at": "2026-09-11T02:02Z", "reason": "it's fine", "evidence": {"exit_code": 0, "duration": 1.5},
                           "approvals": [{"by": "alice", "hash": "90118711690768e1", "used_at": None}], "tags": [], "x": {}}
               for i in range(30)}
    text = yaml.dump({"task": "t", "targets": targets}, Dumper=yaml.SafeDumper, sort_keys=False)
    block = text.split("targets:\n", 1)[1].rstrip("\n").split("\n")
    read, _, slow, _ = FastReader().read_lines(block)
    assert slow == [] and read == targets


# The pieces an outside-string segment is made of, the awkward ones included.
_SEGMENT_PART = st.one_of(
    st.sampled_from(["{", "}", "[", "]", ",", ": ", " ", ":", "\t", "#", "'", "\x00", "\\", "é"]),
    st.sampled_from(["state", "done", "true", "false", "null", "True", "yes", "no", "on", "~", "hash", "token",
                     "approval_hash", "0", "-0", "-0.5", "1", "12", "012", "1.5", "1.5.3", "1e3", "1E+3", "-",
                     "0x1F", "D/24EDE6A4", "0/9A3F2C10", "a-1.5", "_x", "1abc", "+1", ".5", "x/y+z", "a.b",
                     "hash: 12", "token: 1e3", "approval_hash: -1.5", "hashes: 12"]),
    st.text(st.sampled_from("aZ_09.+/-eE{}[],: "), max_size=8),
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.lists(_SEGMENT_PART, max_size=14).map("".join), min_size=1, max_size=6))
def test_segment_translation_by_shape_agrees_with_the_token_walk(segments):
    """The C-speed translation (shape and runs, each judged once) gives what the token-by-token
    walk gives, for one segment and for segments sharing its caches."""
    from engine.codec.fast import _Segments, _translate

    shared = _Segments()
    for segment in segments:
        assert _Segments().translate(segment) == _translate(segment), segment
        assert shared.translate(segment) == _translate(segment), segment


@settings(max_examples=1000, deadline=None)
@given(st.one_of(TRICKY, st.text(st.sampled_from("yYoOnNtTfF~<=!&*.+-019dC/_ :e"), max_size=8), st.text(_CHARS, max_size=12)))
def test_the_first_character_shortcut_gives_what_both_resolvers_give(text):
    """`is_plain_string` skips the resolvers for a first character none of them is registered
    for; on any text it answers what PyYAML 1.1's and the core schema's resolvers answer."""
    from yaml.nodes import ScalarNode

    both = (strict.CoreResolver(), yaml.resolver.Resolver())
    expected = all(r.resolve(ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str" for r in both)
    assert strict.is_plain_string(text) == expected
