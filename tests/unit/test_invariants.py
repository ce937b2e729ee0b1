"""Invariants: the article's three sentences and variants, structured forms, unenforced
ones reported, touched counting, and evaluation values."""

from __future__ import annotations

import time

import pytest

from engine.ledger.invariants import evaluate, parse
from engine.ledger.model import Ledger
from engine.ledger.touched import touched

RUNBOOK = {"steps": [
    {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["c"]},
    {"name": "link", "from": "checked", "to": "replicating", "run": ["l"]},
    {"name": "sync", "from": "replicating", "to": "verified", "reversible": True, "run": ["s"]},
    {"name": "cutover", "from": "verified", "to": "done", "run": ["x"]},
]}


def ledger(targets, invariants=(), runbook=RUNBOOK, **kw):
    return Ledger.model_validate({"task": "t", "invariants": list(invariants), "runbook": runbook, "targets": targets, **kw})


@pytest.mark.parametrize("text", [
    "never run cutover on a db whose state != verified",
    "Never run cutover on a db whose state is not verified.",
    "never run the cutover on any target where state != verified",
    "only run cutover on targets whose state is verified",
])
def test_precondition_sentences(text):
    """The article's precondition and close variants become step cutover requires state verified."""
    inv = parse(text)
    assert (inv.kind, inv.step, inv.state) == ("precondition", "cutover", "verified")


@pytest.mark.parametrize("text,limit", [
    ("never touch more than 2 dbs concurrently", 2),
    ("Never touch more than 3 clusters at once.", 3),
    ("at most 5 services in flight", 5),
    ("no more than 1 db at a time", 1),
])
def test_max_touched_sentences(text, limit):
    """The article's concurrency sentence and variants become a touched-target limit."""
    inv = parse(text)
    assert (inv.kind, inv.limit) == ("max_touched", limit)


@pytest.mark.parametrize("text,op,value,percent", [
    ("pause if error_rate_5m > 0.5%", ">", 0.5, True),
    ("pause when error_rate_5m exceeds 0.5 percent", ">", 0.5, True),
    ("pause if replication_lag_s >= 30", ">=", 30.0, False),
    ("pause if free_disk_gb is below 20", "<", 20.0, False),
])
def test_metric_sentences(text, op, value, percent):
    """The article's pause sentence and variants become a metric threshold; `%` marks a percentage."""
    inv = parse(text)
    assert (inv.kind, inv.op, inv.value, inv.percent) == ("metric", op, value, percent)


def test_structured_forms():
    """Each sentence has a structured form with the same meaning."""
    assert parse({"require": {"step": "cutover", "state": "verified"}}).kind == "precondition"
    assert parse({"max_touched": 2}).limit == 2
    metric = parse({"pause_if": {"metric": "error_rate_5m", "op": ">", "value": "0.5%"}})
    assert (metric.kind, metric.metric, metric.value, metric.percent) == ("metric", "error_rate_5m", 0.5, True)
    assert parse({"pause_if": "error_rate_5m > 0.5%"}).percent is True


@pytest.mark.parametrize("item", [
    "be careful with db-18",
    "never touch more than two dbs concurrently",
    {"max_touched": "lots"},
    {"pause_if": {"metric": "x", "op": "~", "value": 1}},
    {"frobnicate": True},
])
def test_unparseable_invariants_are_unenforced_not_ignored(item):
    """What the engine cannot parse is reported as unenforced, with why, in evaluation too."""
    assert parse(item).kind == "unenforced"
    statuses = evaluate(ledger({"a": {}}, [item]))
    assert [s.status for s in statuses] == ["unenforced"]
    assert statuses[0].value


def test_touched_counts_from_first_irreversible_step_until_done():
    """Queued and checked are untouched; replicating, verified, awaiting (at verified) are touched; done is not."""
    l = ledger({
        "q": {"state": "queued"},
        "c": {"state": "checked"},
        "r": {"state": "replicating"},
        "v": {"state": "verified"},
        "d": {"state": "done"},
        "w": {"state": "awaiting_approval", "awaiting": "cutover"},
    })
    assert touched(l) == ["r", "v", "w"]


def test_awaiting_target_sits_at_its_steps_from_state():
    """A target awaiting approval of link is seen at checked (not yet touched); of cutover at verified (touched)."""
    l = ledger({
        "a": {"state": "awaiting_approval", "awaiting": "link"},
        "b": {"state": "awaiting_approval", "awaiting": "cutover"},
    })
    assert l.position("a") == "checked" and l.position("b") == "verified"
    assert touched(l) == ["b"]


def test_blocked_or_failed_after_touching_stay_touched():
    """A blocked/failed target counts as touched if it was touched (touched_at), not if it never was; in flight always counts."""
    l = ledger({
        "bt": {"state": "blocked", "touched_at": "2026-09-10T01:00Z"},
        "bu": {"state": "blocked"},
        "ft": {"state": "failed", "touched_at": "2026-09-10T01:00Z"},
        "q": {"state": "queued", "in_flight": {"step": "check"}},
    })
    assert touched(l) == ["bt", "ft", "q"]


def test_without_a_runbook_the_articles_middle_states_are_touched():
    """With no runbook, in_progress, replicating, verified and awaiting_approval count as touched."""
    l = ledger({"a": {"state": "replicating"}, "b": {"state": "queued"}, "c": {"state": "in_progress"}}, runbook=None)
    assert touched(l) == ["a", "c"]


def test_evaluation_values():
    """Evaluation gives ok/violated/unknown with the current value, e.g. `touched 3/2`."""
    l = ledger(
        {"a": {"state": "replicating"}, "b": {"state": "verified"}, "c": {"state": "replicating"}},
        ["never touch more than 2 dbs concurrently", "never run cutover on a db whose state != verified", "pause if error_rate_5m > 0.5%"],
    )
    max_t, pre, metric = evaluate(l)
    assert (max_t.status, max_t.value) == ("violated", "touched 3/2")
    assert pre.status == "ok"
    assert metric.status == "unknown" and "no source" in metric.value


def test_metric_readings_decide_ok_or_violated():
    """With a last reading (as the journal records it), a metric threshold is ok or violated and shows value and age."""
    l = ledger({"a": {}}, ["pause if error_rate_5m > 0.5%"], metrics={"error_rate_5m": {"run": "echo 0.02%"}})
    now = time.time()
    ok, = evaluate(l, lambda name: (0.02, True, now - 30), now=now)
    assert ok.status == "ok" and ok.value == "error_rate_5m 0.02% (30s ago)"
    bad, = evaluate(l, lambda name: (0.9, True, now), now=now)
    assert bad.status == "violated"
    unknown, = evaluate(l, None, now=now)
    assert unknown.status == "unknown" and "no reading yet" in unknown.value
    mismatch, = evaluate(l, lambda name: (0.9, False, now), now=now)
    assert mismatch.status == "unknown"


def test_precondition_violated_by_the_runbook_itself():
    """A runbook whose cutover starts from a state other than verified violates the precondition."""
    runbook = {"steps": [{"name": "cutover", "from": "replicating", "to": "done", "run": ["x"]}]}
    pre, = evaluate(ledger({"a": {}}, ["never run cutover on a db whose state != verified"], runbook=runbook))
    assert pre.status == "violated" and "starts from replicating" in pre.value


def test_a_reading_older_than_max_age_is_unknown_stale():
    """A reading older than the metric's max_age (default 300 s) is `unknown (stale)`, never ok or violated."""
    now = time.time()
    default = ledger({"a": {}}, ["pause if error_rate_5m > 0.5%"], metrics={"error_rate_5m": {"run": "echo 0.02%"}})
    fresh, = evaluate(default, lambda name: (0.02, True, now - 299), now=now)
    assert (fresh.status, fresh.stale, fresh.label) == ("ok", False, "ok")
    old, = evaluate(default, lambda name: (0.02, True, now - 8 * 60), now=now)
    assert (old.status, old.stale, old.label) == ("unknown", True, "unknown (stale)")
    assert old.value == "error_rate_5m 0.02% (8m ago): older than max_age 5m"
    high, = evaluate(default, lambda name: (0.9, True, now - 8 * 60), now=now)
    assert high.label == "unknown (stale)"  # an old bad reading does not prove the metric is bad now either
    strict = ledger({"a": {}}, ["pause if error_rate_5m > 0.5%"], metrics={"error_rate_5m": {"run": "echo 1", "max_age": 30}})
    thirty, = evaluate(strict, lambda name: (0.02, True, now - 31), now=now)
    assert thirty.label == "unknown (stale)" and "older than max_age 30s" in thirty.value


def test_max_age_is_validated_and_not_written_back_when_defaulted():
    """`max_age` must be positive; a default one never appears in what the engine writes."""
    from pydantic import ValidationError

    from engine.store.convert import to_data

    with pytest.raises(ValidationError):
        ledger({"a": {}}, metrics={"m": {"run": "echo 1", "max_age": 0}})
    data = to_data(ledger({"a": {}}, metrics={"m": {"run": "echo 1"}, "n": {"run": "echo 2", "max_age": 60}}))
    assert "max_age" not in data["metrics"]["m"] and data["metrics"]["n"]["max_age"] == 60
