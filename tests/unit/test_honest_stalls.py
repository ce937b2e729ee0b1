"""Honest stalls: a full "never touch more than N" is named, with the targets that hold it,
by the session, its note and `handoff status`; a read-only step can say `touches: false`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from engine.ledger.model import InFlight, Ledger
from engine.ledger.stall import hold
from engine.ledger.touched import is_touched, touched
from tests.conftest import handoff

INVARIANT = "never touch more than 2 clusters concurrently"

# c0 and c1 are cordoned (mid-change) and await approval of roll: the two places are taken.
STALLED = f"""\
task: k8s-roll
invariants:
- {INVARIANT}
runbook:
  steps:
  - {{name: preflight, from: queued, to: checked, reversible: true, run: [echo, preflight, "{{target}}"]}}
  - {{name: cordon, from: checked, to: cordoned, run: [echo, cordon, "{{target}}"]}}
  - {{name: roll, from: cordoned, to: done, run: [echo, roll, "{{target}}"]}}
targets:
  c0: {{state: awaiting_approval, awaiting: roll, awaiting_by: agent, awaiting_since: "2026-09-10T02:11Z"}}
  c1: {{state: awaiting_approval, awaiting: roll, awaiting_by: agent, awaiting_since: "2026-09-10T02:12Z"}}
  c2: {{state: queued}}
  c3: {{state: queued}}
handoff_note: first note
"""


def write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_session_its_note_and_status_name_the_invariant_that_holds_the_fleet(tmp_path: Path) -> None:
    """Not "nothing can proceed without a human" nor "c2 queued, ready for preflight": the invariant and its holders."""
    path = write(tmp_path, STALLED)
    result = handoff("resume", path)
    assert result.returncode == 0, result.stdout + result.stderr
    held = (f'invariant "{INVARIANT}" holds the fleet: 2 of 2 places taken by c0 (awaiting approval of roll), '
            f"c1 (awaiting approval of roll); c2, c3 cannot start until one of them is done")
    assert f"nothing else can start: {held} (2 target(s) wait on people)" in result.stdout
    assert "nothing can proceed without a human" not in result.stdout
    after = load(path)
    assert [after["targets"][n]["state"] for n in ("c2", "c3")] == ["queued", "queued"]  # the guard held them
    note = after["handoff_note"]
    assert f"Held by an invariant:\n- {held}." in note
    assert "ready for preflight" not in note
    assert "- c2 queued, held by the invariant: preflight (reversible) starts once a target holding it is done." in note
    status = handoff("status", path)
    assert f"HELD: {held}" in status.stdout
    data = json.loads(handoff("status", path, "--json").stdout)
    assert data["held"] == {"invariant": INVARIANT, "limit": 2, "waiting": ["c2", "c3"],
                            "holders": [{"target": "c0", "why": "awaiting approval of roll"},
                                        {"target": "c1", "why": "awaiting approval of roll"}], "text": held}


def test_a_limit_with_room_holds_nothing_and_says_nothing(tmp_path: Path) -> None:
    """One place free: c2 runs its preflight, and nothing claims the invariant holds it."""
    path = write(tmp_path, STALLED.replace("  c1: {state: awaiting_approval, awaiting: roll, awaiting_by: agent, "
                                           'awaiting_since: "2026-09-10T02:12Z"}\n', ""))
    assert json.loads(handoff("status", path, "--json").stdout)["held"] is None
    assert "HELD:" not in handoff("status", path).stdout
    result = handoff("resume", path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert load(path)["targets"]["c2"]["state"] in ("checked", "awaiting_approval")


def test_touches_false_lets_a_read_only_step_run_while_the_limit_is_full(tmp_path: Path) -> None:
    """`touches: false` on preflight: c2 and c3 are preflighted beside two held places; the default still holds them."""
    quiet = STALLED.replace("reversible: true, run: [echo, preflight", "reversible: true, touches: false, run: [echo, preflight")
    path = write(tmp_path, quiet)
    result = handoff("resume", path)
    assert result.returncode == 0, result.stdout + result.stderr
    after = load(path)["targets"]
    assert after["c2"]["state"] == after["c3"]["state"] == "checked"
    # Now c2 and c3 need cordon, which touches: the invariant holds them, and says so.
    assert 'nothing else can start: invariant "never touch more than 2 clusters concurrently" holds the fleet' in result.stdout
    assert "c2, c3 cannot start until one of them is done" in result.stdout


def test_a_running_step_that_does_not_touch_takes_no_place() -> None:
    """A preflight in flight with touches: false is not touched and nothing is held; with the default it takes a place."""
    for flag, expected in ((", touches: false", False), ("", True)):
        text = STALLED.replace("reversible: true, run: [echo, preflight", f"reversible: true{flag}, run: [echo, preflight")
        ledger = Ledger.model_validate(yaml.safe_load(text))
        ledger.targets["c2"].in_flight = InFlight(step="preflight", started_at="2026-09-10T02:13:00Z")
        assert ("c2" in touched(ledger)) is expected
        assert is_touched(ledger, "c2") is expected
        assert (hold(ledger) is not None) is expected  # c3's preflight: held only if it would touch


def test_a_target_holding_a_place_is_never_held_back_by_it() -> None:
    """c0 and c1 are cordoned (mid-change: they take the two places) and can drain on their
    own: hold names c2 and c3 as waiting, never c0 or c1; with no one else waiting, nothing
    is held (the session drains them, so "holds the fleet" would be false)."""
    text = STALLED.replace(
        '  - {name: roll, from: cordoned, to: done, run: [echo, roll, "{target}"]}\n',
        '  - {name: drain, from: cordoned, to: drained, reversible: true, run: [echo, drain, "{target}"]}\n'
        '  - {name: roll, from: drained, to: done, run: [echo, roll, "{target}"]}\n')
    text = text.replace("c0: {state: awaiting_approval, awaiting: roll, awaiting_by: agent, awaiting_since: \"2026-09-10T02:11Z\"}",
                        "c0: {state: cordoned}")
    text = text.replace("c1: {state: awaiting_approval, awaiting: roll, awaiting_by: agent, awaiting_since: \"2026-09-10T02:12Z\"}",
                        "c1: {state: cordoned}")
    ledger = Ledger.model_validate(yaml.safe_load(text))
    assert touched(ledger) == ["c0", "c1"]
    held = hold(ledger)
    assert held is not None and held.waiting == ["c2", "c3"]
    assert held.holders == [("c0", "cordoned, mid-change"), ("c1", "cordoned, mid-change")]
    del ledger.targets["c2"], ledger.targets["c3"]
    assert hold(ledger) is None


def test_touches_false_on_an_irreversible_step_is_refused_with_its_line(tmp_path: Path) -> None:
    """check names file:line:col and what to do; the session refuses to start (exit 2); the file is unchanged."""
    bad = STALLED.replace('{{name: cordon, from: checked, to: cordoned, run'.replace("{{", "{"),
                          '{name: cordon, from: checked, to: cordoned, touches: false, run')
    path = write(tmp_path, bad)
    before = path.read_bytes()
    check = handoff("check", path)
    assert check.returncode == 1
    assert (f"{path.name}:7:" in check.stdout + check.stderr
            and "runbook step cordon is irreversible but says touches: false" in check.stdout
            and "remove touches: false" in check.stdout), check.stdout + check.stderr
    resume = handoff("resume", path)
    assert resume.returncode == 2 and "touches: false" in resume.stdout + resume.stderr
    assert path.read_bytes() == before


def test_touches_that_is_not_true_or_false_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, STALLED.replace("reversible: true, run: [echo, preflight", "reversible: true, touches: maybe, run: [echo, preflight"))
    before = path.read_bytes()
    for command in ("check", "status", "resume"):
        result = handoff(command, path)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert f"{path.name}:6:" in result.stderr and "touches" in result.stderr and "fix it and save again" in result.stderr
    assert path.read_bytes() == before


def test_the_planners_brief_names_the_hold_too() -> None:
    """A model is told what holds the fleet, in the same words, not only "touched 2 (limit 2)"."""
    from engine.planners.brief import BriefContext, build

    brief = build(Ledger.model_validate(yaml.safe_load(STALLED)), BriefContext("fleet.yaml"))
    assert f'HELD: invariant "{INVARIANT}" holds the fleet: 2 of 2 places taken by c0' in brief
    assert "HELD:" not in build(Ledger.model_validate(yaml.safe_load(STALLED.replace("never touch more than 2", "never touch more than 9"))),
                                BriefContext("fleet.yaml"))


def test_an_approval_asked_for_a_target_already_mid_change_is_not_counted_twice() -> None:
    """c0 awaits roll while cordoned: it holds one of the two places once. c2's cordon can
    still run once approved, so asking for it pages a person (counting c0 again would say
    the limit is full and leave c2 unasked)."""
    from engine.planners.autopilot import Action, Autopilot

    text = STALLED.replace("  c1: {state: awaiting_approval, awaiting: roll, awaiting_by: agent, "
                           'awaiting_since: "2026-09-10T02:12Z"}\n', "")
    ledger = Ledger.model_validate(yaml.safe_load(text))
    assert touched(ledger) == ["c0"]
    assert Autopilot().should_ask(ledger, Action("c2", ledger.step("cordon")))


def test_the_note_warns_only_about_targets_mid_change() -> None:
    """A blocked target mid-change (touched) is not to be restarted from scratch; one blocked
    before anything touched it (c5) is not mid-change, and a done one is finished business:
    no "Do NOT" line for either."""
    from engine.session.handoff_note import generate

    text = STALLED.replace("  c3: {state: queued}\n", "  c3: {state: done}\n  c4: {state: blocked, reason: cordon hung, "
                           'touched_at: "2026-09-10T02:00Z"}\n  c5: {state: blocked, reason: waiting on the vendor}\n')
    ledger = Ledger.model_validate(yaml.safe_load(text))
    note = generate(ledger, ledger_path="fleet.yaml", ending="test", session="s1")
    assert "- Do NOT retry cordon on c0: irreversible, already done." in note
    assert "- Do NOT restart c4 from scratch: it is mid-change (touched since 2026-09-10T02:00Z)." in note
    assert "c3" not in note and "Do NOT restart c5" not in note
