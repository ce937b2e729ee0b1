"""What a store keeps after a write is what the file says, under hypothesis: after any
`store.transact(fn)` that writes, the ledger the store keeps (`store.read()`) equals a fresh
read of the file by another store, the document parser with no cache, and the strict YAML
loader: the same targets in the same order, equal `model_dump()` (type- and spelling-exact),
the same touched list and proposals. Hand-written ledgers in many layouts (CRLF, BOM, block
scalars, comments, numbers with their own spelling), emitted and PyYAML-written ones; target
and top-level changes of every kind, hand edits and another process's writes between.
tests/unit/test_kept_equals_fresh.py holds the minimal cases it found (stop 46)."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile

import yaml
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from engine.codec import strict
from engine.codec.canonical import emit_document
from engine.codec.document import parse_document
from engine.codec.numbers import same
from engine.errors import LedgerInvalid, Refused
from engine.ledger.model import (
    Agent,
    Approval,
    ApprovalPolicy,
    Approver,
    Budget,
    Evidence,
    InFlight,
    Metric,
    Notifier,
    Pause,
    PreviousNote,
    Step,
    Target,
)
from engine.store.convert import to_ledger
from engine.store.file import FileStore, decode
from tests.conftest import ARTICLE, RUNBOOK_LEDGER
from tests.unit import hand_written
from tests.unit.hand_written_nested import nested_ledgers
from tests.unit.test_codec_props import KEY, NAME, TEXT, VALUE
from tests.unit.test_codec_props import ledgers as data_ledgers

# ---------------------------------------------------------------- comparison

def diff(a, b, path="") -> list[str]:
    """Paths where a and b differ (by `same`: type-exact, spelling-exact)."""
    if same(a, b):
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        if list(a) != list(b) and set(a) == set(b) and path.endswith("targets"):
            out.append(f"{path}: order {list(a)} != {list(b)}")
        for k in dict.fromkeys([*a, *b]):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {a.get(k, '<missing>')!r} vs {b.get(k, '<missing>')!r}")
            else:
                out.extend(diff(a[k], b[k], f"{path}.{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(diff(x, y, f"{path}[{i}]"))
        return out
    return [f"{path}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"]


def fresh_parses(path: str):
    raw = open(path, "rb").read()
    text = decode(raw, path)
    out = {"FileStore": FileStore(path).read()}
    out["parse_document"] = to_ledger(parse_document(text, path, None).data, path, text)
    out["strict"] = to_ledger(strict.load(text, path), path, text)
    return out


def check(store: FileStore, path: str, strict_types: bool = True) -> None:
    from engine.ledger.touched import touched
    from engine.planners.autopilot import Autopilot
    kept = store.read()
    for how, fresh in fresh_parses(path).items():
        assert list(kept.targets) == list(fresh.targets), f"target order, kept vs {how}"
        assert touched(kept) == touched(fresh), f"touched, kept vs {how}"
        assert [a.target for a in Autopilot().proposals(kept)] == [a.target for a in Autopilot().proposals(fresh)], how
        a, b = kept.model_dump(), fresh.model_dump()
        assert a == b, f"model_dump ==, kept vs {how}: {diff(a, b)}"
        if strict_types:
            d = diff(a, b)
            assert not d, f"model_dump types, kept vs {how}: {d}"


# ---------------------------------------------------------------- documents

@st.composite
def documents(draw) -> str:
    kind = draw(st.sampled_from(["hand", "nested", "nested", "fixture", "emitted", "pyyaml"]))
    if kind == "nested":
        text = draw(nested_ledgers())
    elif kind == "hand":
        text = draw(hand_written.ledgers()).text
    elif kind == "fixture":
        text = draw(st.sampled_from([RUNBOOK_LEDGER, ARTICLE]))
    else:
        data = draw(data_ledgers())
        if kind == "emitted":
            text = emit_document(data)[0]
        else:
            text = yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False,
                             default_flow_style=draw(st.sampled_from([False, None, True])), allow_unicode=draw(st.booleans()))
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")
    if draw(st.integers(0, 4)) == 0:
        text = "\ufeff" + text
    return text


# ---------------------------------------------------------------- operations

OPT_TEXT = st.one_of(st.none(), TEXT)
TARGET_FIELDS = ["checkpoint", "last_action", "next_action", "verified_at", "reason", "changed_at", "touched_at",
                 "awaiting", "awaiting_by", "awaiting_started_by", "awaiting_started_as", "awaiting_since"]
STATES = st.sampled_from(["queued", "checked", "in_progress", "replicating", "verified", "done", "failed", "blocked"])
EXTRA_KEY = KEY.filter(lambda k: k not in Target.model_fields and k not in dir(Target) and not k.startswith("_"))


def approval(draw) -> Approval:
    a = Approval(by=draw(TEXT), user=draw(TEXT), at=draw(TEXT), step=draw(TEXT), hash=draw(TEXT),
                 checkpoint=draw(OPT_TEXT), comment=draw(OPT_TEXT))
    return a


@st.composite
def target_op(draw):
    kind = draw(st.sampled_from([
        "field", "field", "state", "extra", "del_extra", "in_flight", "in_flight_pid", "evidence", "evidence_field",
        "approve", "approvals_clear", "use_approval", "changed_outside", "replace", "add", "delete", "pop_put_back",
        "validate_new", "nested_extra", "extra_list_append", "targets_clear"]))
    i = draw(st.integers(0, 20))
    if kind == "field":
        return (kind, i, draw(st.sampled_from(TARGET_FIELDS)), draw(OPT_TEXT))
    if kind == "nested_extra":
        return (kind, i, draw(st.sampled_from(["evidence", "in_flight", "approval"])), draw(st.sampled_from(["zz", "note", "a b", "no"])),
                draw(VALUE))
    if kind == "extra_list_append":
        return (kind, i, draw(VALUE))
    if kind == "targets_clear":
        return (kind, draw(st.booleans()))
    if kind == "state":
        return (kind, i, draw(STATES))
    if kind == "extra":
        return (kind, i, draw(EXTRA_KEY), draw(VALUE))
    if kind in ("del_extra", "approvals_clear", "delete", "pop_put_back", "in_flight_pid"):
        return (kind, i, draw(st.integers(0, 9)))
    if kind == "in_flight":
        return (kind, i, None if draw(st.booleans()) else InFlight(step=draw(TEXT), pid=draw(st.none() | st.integers(1, 99999)),
                                                                  started_at=draw(OPT_TEXT), token=draw(OPT_TEXT)))
    if kind == "evidence":
        return (kind, i, None if draw(st.booleans()) else Evidence(
            step=draw(OPT_TEXT), exit_code=draw(st.none() | st.integers(-255, 255)),
            duration=draw(st.none() | st.floats(0, 1e6)), timed_out=draw(st.none() | st.booleans())))
    if kind == "evidence_field":
        return (kind, i, draw(st.sampled_from(["step", "at"])), draw(OPT_TEXT))
    if kind == "approve":
        return (kind, i, approval(draw))
    if kind == "use_approval":
        return (kind, i, draw(OPT_TEXT))
    if kind == "changed_outside":
        return (kind, i, draw(st.none() | st.dictionaries(KEY, VALUE, max_size=3)))
    if kind == "replace":
        return (kind, i, Target(state=draw(STATES), checkpoint=draw(OPT_TEXT), reason=draw(OPT_TEXT)))
    if kind == "add":
        return (kind, draw(NAME), Target(state=draw(STATES), checkpoint=draw(OPT_TEXT), last_action=draw(OPT_TEXT)))
    if kind == "validate_new":
        data = {"state": draw(STATES), **draw(st.dictionaries(EXTRA_KEY, VALUE, max_size=3))}
        for f in draw(st.lists(st.sampled_from(TARGET_FIELDS), max_size=3)):
            data[f] = draw(TEXT)
        return (kind, draw(st.one_of(KEY, st.integers(0, 20))), data)
    raise AssertionError(kind)


@st.composite
def top_op(draw):
    kind = draw(st.sampled_from([
        "note", "note_by", "previous_note", "invariant", "invariant_dict", "invariants_clear", "step_add", "step_pop",
        "runbook_state", "metric_add", "metric_del", "notify_add", "notify_clear", "redact_add", "budget", "paused",
        "task", "top_extra", "top_del_extra", "owner_shift", "approvers", "agent", "approval_policy", "reverse_targets"]))
    if kind in ("note", "note_by", "owner_shift"):
        return (kind, draw(OPT_TEXT) if kind != "task" else draw(TEXT))
    if kind == "task":
        return (kind, draw(TEXT))
    if kind == "previous_note":
        return (kind, None if draw(st.booleans()) else PreviousNote(text=draw(TEXT), by=draw(OPT_TEXT), at=draw(OPT_TEXT)))
    if kind == "invariant":
        return (kind, draw(TEXT))
    if kind == "invariant_dict":
        return (kind, draw(st.dictionaries(KEY, VALUE, min_size=1, max_size=3)))
    if kind == "step_add":
        return (kind, Step(name=draw(NAME), **{"from": "queued"}, to="checked", run=draw(st.lists(TEXT, min_size=1, max_size=3)),
                           reversible=draw(st.booleans()), timeout=draw(st.none() | st.floats(0.1, 1e5)),
                           description=draw(OPT_TEXT)))
    if kind == "runbook_state":
        return (kind, draw(TEXT))
    if kind == "metric_add":
        return (kind, draw(KEY), Metric(run=draw(st.lists(TEXT, min_size=1, max_size=3)), description=draw(OPT_TEXT)))
    if kind == "notify_add":
        return (kind, Notifier(webhook=draw(OPT_TEXT), on=draw(st.none() | st.lists(TEXT, max_size=2))))
    if kind == "redact_add":
        return (kind, re.escape(draw(TEXT.filter(bool))))
    if kind == "budget":
        return (kind, None if draw(st.booleans()) else Budget(steps=draw(st.none() | st.integers(1, 100)),
                                                             minutes=draw(st.none() | st.floats(0.5, 1e4))))
    if kind == "paused":
        return (kind, None if draw(st.booleans()) else Pause(by=draw(OPT_TEXT), why=draw(OPT_TEXT), at=draw(OPT_TEXT)))
    if kind == "top_extra":
        return (kind, draw(KEY.filter(lambda k: not k.startswith("_") and k not in dir(
            __import__("engine.ledger.model", fromlist=["Ledger"]).Ledger))), draw(VALUE))
    if kind == "approvers":
        return (kind, draw(st.none() | st.lists(st.one_of(TEXT, st.builds(
            lambda n, u: Approver(name=n, os_user=u), TEXT, TEXT.filter(bool))), max_size=3)))
    if kind == "agent":
        return (kind, None if draw(st.booleans()) else Agent(model=draw(OPT_TEXT)))
    if kind == "approval_policy":
        return (kind, None if draw(st.booleans()) else ApprovalPolicy(count=draw(st.integers(1, 3)),
                                                                     remind_after=draw(st.none() | st.floats(1, 1e5))))
    return (kind,)


def _name(ledger, i):
    names = list(dict.keys(ledger.targets))
    if not names:
        return None
    return names[i % len(names)]


def apply(ledger, op):
    kind = op[0]
    ts = ledger.targets
    if kind == "field":
        n = _name(ledger, op[1])
        if n is not None:
            setattr(ts[n], op[2], op[3])
    elif kind == "nested_extra":
        n = _name(ledger, op[1])
        if n is not None:
            t = ts[n]
            obj = t.evidence if op[2] == "evidence" else t.in_flight if op[2] == "in_flight" else (t.approvals[0] if t.approvals else None)
            if obj is not None:
                setattr(obj, op[3], op[4])
    elif kind == "extra_list_append":
        n = _name(ledger, op[1])
        if n is not None:
            t = ts[n]
            for key, value in list((t.model_extra or {}).items()):
                if isinstance(value, list):
                    t.model_extra[key].append(op[2])
                    break
                if isinstance(value, dict):
                    t.model_extra[key]["added"] = op[2]
                    break
    elif kind == "targets_clear":
        if op[1]:
            ts.clear()
        else:
            ledger.targets = {}
    elif kind == "state":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n].state = op[2]
    elif kind == "extra":
        n = _name(ledger, op[1])
        if n is not None:
            setattr(ts[n], op[2], op[3])
    elif kind == "del_extra":
        n = _name(ledger, op[1])
        if n is not None:
            extra = list(ts[n].model_extra or {})
            if extra:
                delattr(ts[n], extra[op[2] % len(extra)])
    elif kind == "in_flight":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n].in_flight = op[2].model_copy(deep=True) if op[2] else None
    elif kind == "in_flight_pid":
        n = _name(ledger, op[1])
        if n is not None and ts[n].in_flight is not None:
            ts[n].in_flight.pid = op[2]
    elif kind == "evidence":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n].evidence = op[2].model_copy(deep=True) if op[2] else None
    elif kind == "evidence_field":
        n = _name(ledger, op[1])
        if n is not None and ts[n].evidence is not None:
            setattr(ts[n].evidence, op[2], op[3])
    elif kind == "approve":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n].approvals.append(op[2].model_copy(deep=True))
    elif kind == "approvals_clear":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n].approvals.clear()
    elif kind == "use_approval":
        n = _name(ledger, op[1])
        if n is not None and ts[n].approvals:
            ts[n].approvals[0].used_at = op[2]
    elif kind == "changed_outside":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n].changed_outside = op[2]
    elif kind == "replace":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n] = op[2].model_copy(deep=True)
    elif kind == "add":
        ts[str(op[1])] = op[2].model_copy(deep=True)
    elif kind == "validate_new":
        name = op[1] if isinstance(op[1], str) else _name(ledger, op[1])
        if name is not None:
            ts[name] = Target.model_validate(op[2])
    elif kind == "delete":
        n = _name(ledger, op[1])
        if n is not None and len(ts) > 1:
            del ts[n]
    elif kind == "pop_put_back":
        n = _name(ledger, op[1])
        if n is not None:
            ts[n] = ts.pop(n)
    elif kind == "reverse_targets":
        ledger.targets = {n: ts[n] for n in reversed(list(ts))}  # the views the transaction handed out
    elif kind == "note":
        ledger.handoff_note = op[1]
    elif kind == "note_by":
        ledger.handoff_note_by = op[1]
    elif kind == "owner_shift":
        ledger.owner_shift = op[1]
    elif kind == "task":
        ledger.task = op[1]
    elif kind == "previous_note":
        ledger.previous_note = op[1].model_copy(deep=True) if op[1] else None
    elif kind == "invariant":
        ledger.invariants.append(op[1])
    elif kind == "invariant_dict":
        ledger.invariants.append(dict(op[1]))
    elif kind == "invariants_clear":
        ledger.invariants.clear()
    elif kind == "step_add":
        if ledger.runbook is None:
            from engine.ledger.model import Runbook
            ledger.runbook = Runbook()
        ledger.runbook.steps.append(op[1].model_copy(deep=True))
    elif kind == "step_pop":
        if ledger.runbook is not None and ledger.runbook.steps:
            ledger.runbook.steps.pop()
    elif kind == "runbook_state":
        if ledger.runbook is not None:
            ledger.runbook.states.append(op[1])
    elif kind == "metric_add":
        ledger.metrics[op[1]] = op[2].model_copy(deep=True)
    elif kind == "metric_del":
        if ledger.metrics:
            ledger.metrics.pop(next(iter(ledger.metrics)))
    elif kind == "notify_add":
        ledger.notify.append(op[1].model_copy(deep=True))
    elif kind == "notify_clear":
        ledger.notify.clear()
    elif kind == "redact_add":
        ledger.redact.append(op[1])
    elif kind == "budget":
        ledger.budget = op[1].model_copy(deep=True) if op[1] else None
    elif kind == "paused":
        ledger.paused = op[1].model_copy(deep=True) if op[1] else None
    elif kind == "top_extra":
        setattr(ledger, op[1], op[2])
    elif kind == "top_del_extra":
        extra = list(ledger.model_extra or {})
        if extra:
            delattr(ledger, extra[0])
    elif kind == "approvers":
        ledger.approvers = [a.model_copy(deep=True) if hasattr(a, "model_copy") else a for a in op[1]] if op[1] is not None else None
    elif kind == "agent":
        ledger.agent = op[1].model_copy(deep=True) if op[1] else None
    elif kind == "approval_policy":
        ledger.approval_policy = op[1].model_copy(deep=True) if op[1] else None
    else:
        raise AssertionError(kind)


OPS = st.one_of(target_op(), target_op(), top_op())

@contextlib.contextmanager
def scratch():
    """A folder of its own for one example, with its own per-user cache (XDG_CACHE_HOME: the parse
    caches of a few hundred ledgers never land in the user's), removed afterwards."""
    before = os.environ.get("XDG_CACHE_HOME")
    with tempfile.TemporaryDirectory(prefix="kept-") as folder:
        os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
        try:
            yield folder
        finally:
            if before is None:
                del os.environ["XDG_CACHE_HOME"]
            else:
                os.environ["XDG_CACHE_HOME"] = before


def run_case(text: str, transactions: list[list]) -> None:
    with scratch() as folder:
        _run_case(folder, text, transactions)


def _run_case(folder: str, text: str, transactions: list[list]) -> None:
    path = os.path.join(folder, "ledger.yaml")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    store = FileStore(path)
    try:
        first = store.read()
    except LedgerInvalid as err:
        event(f"initial read invalid: {str(err)[-120:]}")
        return
    want = to_ledger(strict.load(decode(text.encode(), path), path), path, text)  # before any write, the reader agrees too
    assert list(want.targets) == list(first.targets) and not diff(first.model_dump(), want.model_dump())
    for ops_ in transactions:
        note(f"ops: {ops_!r}")
        if ops_ and isinstance(ops_[0], str):  # between transactions: a hand edit, or another process's write
            between(path, ops_)
            continue

        def fn(ledger, ops_=ops_):
            for op in ops_:
                apply(ledger, op)
        try:
            store.transact(fn, accept_shrink=True)
        except (Refused, LedgerInvalid) as err:
            note(f"refused: {err}")
            event(f"refused: {type(err).__name__} {str(err)[:50]}")
            continue
        event("written")
        note(f"file after:\n{open(path, encoding='utf-8', newline='').read()!r}")
        check(store, path)


HAND_EDITS = ["new_target", "state", "top_key", "comment", "other_store"]


def between(path: str, action) -> None:
    kind = action[0]
    if kind == "other_store":
        def fn(ledger):
            for op in action[1]:
                apply(ledger, op)
        try:
            FileStore(path).transact(fn, accept_shrink=True)
        except (Refused, LedgerInvalid):
            pass
        return
    raw = open(path, "rb").read()
    text = raw.decode("utf-8")
    nl = "\r\n" if "\r\n" in text else "\n"
    if kind == "new_target":
        text = re.sub(r"(?m)^targets:[ \t]*\r?\n", lambda m: m.group(0) + f"  zz-hand: {{state: queued, note: 1.30}}{nl}", text, count=1)
    elif kind == "state":
        text = text.replace("state: queued", "state: checked", 1)
    elif kind == "top_key":
        text = text + ("" if text.endswith("\n") else nl) + f"human_key: 1.30{nl}"
    elif kind == "comment":
        text = re.sub(r"(?m)^targets:", f"# a human was here{nl}targets:", text, count=1)
    with open(path, "wb") as fh:
        fh.write(text.encode("utf-8"))


TRANSACTION = st.one_of(
    st.lists(OPS, min_size=1, max_size=5),
    st.lists(OPS, min_size=1, max_size=5),
    st.tuples(st.sampled_from(HAND_EDITS[:-1])).map(list),
    st.tuples(st.just("other_store"), st.lists(OPS, min_size=1, max_size=3)).map(list),
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(documents(), st.lists(TRANSACTION, min_size=1, max_size=4))
def test_kept_ledger_equals_a_fresh_parse(text, transactions):
    note(f"text: {text!r}")
    run_case(text, transactions)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_the_store_reads_what_the_strict_loader_reads(text):
    with scratch() as folder:
        _strict_agrees(folder, text)


def _strict_agrees(folder: str, text: str) -> None:
    path = os.path.join(folder, "ledger.yaml")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    try:
        got = FileStore(path).read()
    except LedgerInvalid:
        return
    want = to_ledger(strict.load(decode(text.encode(), path), path), path, text)
    assert list(got.targets) == list(want.targets)
    assert not diff(got.model_dump(), want.model_dump())
