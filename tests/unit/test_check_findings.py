"""`handoff check` finds what would stop or stall a session, each at file:line:col with a
suggestion, and `handoff resume` refuses such a ledger before it takes the lease.

Each ledger here is one the old `check` passed (exit 0) and the old `resume` then
"ran" with exit 0 while no target could ever move. The CLI runs as a real process.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from engine.audit.journal import journal_path
from engine.checks import analyse
from engine.ledger.invariants import closest_form, parse
from engine.ledger.model import Ledger
from engine.store.file import FileStore
from tests.conftest import ROOT, handoff

# A small, correct ledger with a runbook; each test breaks one thing in it.
GOOD = textwrap.dedent("""\
    task: tls-rotation
    invariants:
      - never run revoke on a service whose state != deployed
      - never touch more than 2 services concurrently
      - pause if handshake_errors > 0.5
    budget: {steps: 20, minutes: 30, handoff_at: 0.75}
    approvers: [{name: alice, os_user: alice}]
    notify:
      - run: ["true"]
        on: [approval_needed, failed]
    metrics:
      handshake_errors: {run: [echo, "0"], description: failed handshakes per minute}
    runbook:
      states: [deployed]
      steps:
        - name: deploy
          from: queued
          to: checked
          reversible: true
          run: [echo, deploy, "{target}"]
        - name: switch
          from: checked
          to: deployed
          reversible: true
          run: [echo, switch, "{target}"]
        - name: revoke
          from: deployed
          to: done
          run: [echo, revoke, "{target}"]
    targets:
      svc-01: {state: queued}
      svc-02: {state: queued}
    """)


def write(tmp_path: Path, text: str, name: str = "ledger.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def check_json(path: Path, *flags: str) -> tuple[int, dict]:
    result = handoff("check", path, "--json", *flags)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def one_finding(path: Path, needle: str) -> dict:
    """The single finding whose message contains `needle` (check exits 1)."""
    code, data = check_json(path)
    assert code == 1 and data["ok"] is False
    found = [f for f in data["findings"] if needle in f["message"]]
    assert len(found) == 1, data["findings"]
    return found[0]


def line_of(path: Path, fragment: str) -> int:
    """1-based line of the first line containing `fragment`."""
    return next(i for i, line in enumerate(path.read_text().split("\n"), 1) if fragment in line)


def test_the_good_ledger_passes_strict(tmp_path):
    """The baseline every other test breaks: no finding at all, even with --strict."""
    code, data = check_json(write(tmp_path, GOOD), "--strict")
    assert (code, data["findings"], data["problems"]) == (0, [], [])


def test_unknown_placeholder_names_the_valid_ones(tmp_path):
    """{service}: a problem at the run's line, listing the placeholders a target has."""
    path = write(tmp_path, GOOD.replace('run: [echo, switch, "{target}"]', 'run: [echo, switch, "{service}"]'))
    f = one_finding(path, "{service}")
    assert (f["file"], f["line"], f["severity"]) == (str(path), line_of(path, "{service}"), "error")
    assert "svc-01, svc-02 do not have" in f["message"]
    assert "{target}" in f["suggestion"] and "{checkpoint}" in f["suggestion"] and "{ledger_dir}" in f["suggestion"]


def test_a_target_field_is_a_placeholder_only_if_every_target_has_it(tmp_path):
    """{service} is fine once each movable target has `service:`; one without it is named."""
    text = GOOD.replace('"{target}"]\n    - name: switch', '"{service}"]\n    - name: switch')
    fine = text.replace("svc-01: {state: queued}", "svc-01: {state: queued, service: a}").replace(
        "svc-02: {state: queued}", "svc-02: {state: queued, service: b}")
    assert check_json(write(tmp_path, fine, "fine.yaml"))[0] == 0
    half = text.replace("svc-01: {state: queued}", "svc-01: {state: queued, service: a}")
    f = one_finding(write(tmp_path, half, "half.yaml"), "{service}")
    assert "svc-02 does not have" in f["message"] and "svc-01" not in f["message"]


def test_misspelt_step_key_points_at_the_key_and_suggests_run(tmp_path):
    """`runn:` is an unknown key at its own line and column; no second "no run" finding."""
    path = write(tmp_path, GOOD.replace("run: [echo, switch", "runn: [echo, switch"))
    f = one_finding(path, '"runn"')
    assert (f["line"], f["column"]) == (line_of(path, "runn:"), 7)
    assert f["suggestion"] == 'did you mean "run"?'
    assert not any("no `run`" in g["message"] for g in check_json(path)[1]["findings"])


def test_unknown_key_in_a_metric_is_a_problem_and_is_kept(tmp_path):
    """A typo inside a metric is a problem; the key is still in the file (unknown keys are kept)."""
    path = write(tmp_path, GOOD.replace("description: failed", "descripton: failed"))
    f = one_finding(path, '"descripton"')
    assert f["suggestion"] == 'did you mean "description"?'
    assert "descripton" in FileStore(str(path)).read().metrics["handshake_errors"].__pydantic_extra__


def test_from_of_an_unknown_state_suggests_the_closest(tmp_path):
    """`from: chekced`: the step can never run; its from line; did you mean "checked"?"""
    path = write(tmp_path, GOOD.replace("from: checked", "from: chekced"))
    f = one_finding(path, 'starts from "chekced"')
    assert f["line"] == line_of(path, "chekced") and f["suggestion"] == 'did you mean "checked"?'


def test_a_target_where_no_step_leaves_can_never_finish(tmp_path):
    """A target sitting in a state no step leaves (and not done) is a problem at its line."""
    path = write(tmp_path, GOOD.replace("from: checked", "from: chekced").replace(
        "svc-02: {state: queued}", "svc-02: {state: checked}"))
    f = one_finding(path, "can never finish")
    assert f["line"] == line_of(path, "svc-02:") and f["message"].startswith('svc-02 is in "checked"')
    assert 'runbook step switch starts from "chekced"' in f["suggestion"]


def test_a_step_no_target_can_reach_is_a_problem(tmp_path):
    """A step from a declared state that nothing leads to and no target is in."""
    path = write(tmp_path, GOOD.replace("states: [deployed]", "states: [deployed, parked]").replace(
        "    - name: revoke\n      from: deployed", "    - name: revoke\n      from: parked"))
    code, data = check_json(path)
    messages = [f["message"] for f in data["findings"] if f["severity"] == "error"]
    assert code == 1 and any('revoke starts from "parked", which no target can reach' in m for m in messages)


def test_irreversible_until_and_retries_are_problems(tmp_path):
    """`until` or `retries > 0` on an irreversible step: it runs at most once per approval."""
    path = write(tmp_path, GOOD.replace("      run: [echo, revoke,", "      retries: 2\n      until: value < 1\n"
                                        "      run: [echo, revoke,"))
    code, data = check_json(path)
    codes = {f["message"].split(" is irreversible but has ")[-1].split(" ")[0] for f in data["findings"]}
    assert code == 1 and {"retries:", "`until`,"} <= codes


def test_until_on_a_run_that_prints_no_number(tmp_path):
    """`until` on `true` can never hold; on `echo 0` it can."""
    base = GOOD.replace("      run: [echo, switch, \"{target}\"]", "      until: value < 1\n      run: [\"true\"]")
    f = one_finding(write(tmp_path, base), "never prints a number")
    assert "until: value < 1" in f["message"]
    assert check_json(write(tmp_path, base.replace('run: ["true"]', 'run: [echo, "0"]'), "ok.yaml"))[0] == 0


def test_pause_threshold_without_a_metric_suggests_the_close_one(tmp_path):
    """A threshold whose metric has no `metrics` entry: did you mean the one that exists?"""
    path = write(tmp_path, GOOD.replace("pause if handshake_errors", "pause if handshake_error"))
    f = one_finding(path, "no source")
    assert f["line"] == line_of(path, "pause if") and f["suggestion"] == 'did you mean "handshake_errors"?'


def test_unenforced_invariant_is_a_problem_with_a_runbook_and_suggests_a_form(tmp_path):
    """With a runbook a sentence the engine cannot read is a problem; the suggestion parses."""
    path = write(tmp_path, GOOD.replace("never touch more than 2 services concurrently", "at most 2 services at the same time please"))
    f = one_finding(path, "unenforced")
    assert 'write it as "never touch more than 2 services concurrently"' in f["suggestion"]


def test_invariant_that_names_a_missing_step_or_disagrees_with_the_runbook(tmp_path):
    """`never run revok ...` guards nothing; a precondition the step's `from` contradicts refuses it forever."""
    f = one_finding(write(tmp_path, GOOD.replace("never run revoke", "never run revok")), "guards nothing")
    assert f["suggestion"] == 'did you mean "revoke"?'
    path = write(tmp_path, GOOD.replace("state != deployed", "state != checked"), "other.yaml")
    code, data = check_json(path)
    assert code == 1 and [f["message"] for f in data["findings"] if "disagree" in f["message"]]
    assert not any(p.startswith("invariant violated") for p in data["problems"])  # said once, with the fix


@pytest.mark.parametrize("budget, field", [("{steps: 20, minutes: -0.05, handoff_at: 0.75}", "minutes"),
                                           ("{steps: 20, minutes: 30, handoff_at: 5}", "handoff_at"),
                                           ("{steps: 0, minutes: 30}", "steps")])
def test_invalid_budget(tmp_path, budget, field):
    """Values positive, handoff_at in (0, 1]: otherwise the session never hands off."""
    path = write(tmp_path, GOOD.replace("{steps: 20, minutes: 30, handoff_at: 0.75}", budget))
    f = one_finding(path, f"budget.{field}")
    assert f["line"] == line_of(path, "budget:") and f["column"] == path.read_text().split("\n")[f["line"] - 1].index(field + ":") + 1 + len(field) + 2


def test_unknown_notify_event_suggests_the_real_one(tmp_path):
    """A typo in `on:` silently meant nobody was paged; now a problem naming the event."""
    f = one_finding(write(tmp_path, GOOD.replace("on: [approval_needed, failed]", "on: [aproval_needed, failed]")),
                    "aproval_needed")
    assert f["suggestion"] == 'did you mean "approval_needed"?'


def test_warnings_are_problems_only_with_strict(tmp_path):
    """No notify with approval gates, and a step no target will use: warnings; --strict fails on them."""
    text = GOOD.replace('notify:\n  - run: ["true"]\n    on: [approval_needed, failed]\n', "")
    text = text.replace("svc-01: {state: queued}", "svc-01: {state: deployed}").replace(
        "svc-02: {state: queued}", "svc-02: {state: deployed}")
    path = write(tmp_path, text)
    code, data = check_json(path)
    warnings = sorted(f["message"].split(":")[0] for f in data["findings"] if f["severity"] == "warning")
    assert code == 0 and data["ok"] and len(warnings) == 3  # nobody paged; deploy and switch unused
    assert any("nobody will be paged" in f["message"] for f in data["findings"])
    assert check_json(path, "--strict")[0] == 1


def test_no_runbook_stays_valid_with_a_warning(article):
    """The article's ledger: exit 0 with "no runbook" as a warning; a problem with --strict."""
    result = handoff("check", article)
    assert result.returncode == 0 and "warning: no runbook: viewable, sessions cannot act" in result.stdout
    code, data = check_json(article, "--strict")
    assert code == 1 and any("no runbook" in p for p in data["problems"])


def test_check_json_keeps_its_keys_and_adds_findings(tmp_path):
    """ok, problems, unenforced, invariants as before; findings with the six documented keys."""
    _, data = check_json(write(tmp_path, GOOD.replace("runn", "run").replace("from: checked", "from: chekced")))
    assert {"ok", "problems", "unenforced", "invariants", "findings"} == set(data)
    assert all(set(f) == {"severity", "message", "file", "line", "column", "suggestion"} for f in data["findings"])
    assert data["problems"] and all(isinstance(p, str) for p in data["problems"])


def test_check_changes_nothing_on_disk(tmp_path):
    """A broken ledger stays byte for byte what it was, and no file appears beside it."""
    path = write(tmp_path, GOOD.replace("from: checked", "from: chekced"))
    before = path.read_bytes()
    assert handoff("check", path).returncode == 1
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.yaml"]


def test_text_output_is_file_line_col_then_the_fix(tmp_path):
    """The one-line form editors and people read: path:line:col: message; suggestion."""
    path = write(tmp_path, GOOD.replace("from: checked", "from: chekced"))
    result = handoff("check", path)
    line = line_of(path, "chekced")
    first = result.stdout.split("\n")[0]
    assert first.startswith(f"{path}:{line}:13: runbook step switch starts from \"chekced\"")
    assert first.endswith('; did you mean "checked"?')


def test_explain_prints_every_form_without_a_ledger():
    """`check --explain` alone: the three sentence forms and their structured forms; exit 0."""
    result = handoff("check", "--explain")
    assert result.returncode == 0
    for text in ("never run STEP on a TARGET whose state != STATE", "{max_touched: N}", "pause if METRIC > VALUE[%]"):
        assert text in result.stdout


def test_explain_is_not_mixed_into_json(article):
    """--explain is text for people: with --json it is a usage error, not broken JSON."""
    result = handoff("check", "--explain", "--json", article)
    assert result.returncode == 2 and "without --json" in result.stderr and result.stdout == ""


def test_explain_with_a_ledger_shows_how_each_invariant_reads(article):
    result = handoff("check", "--explain", article)
    assert "-> {require: {step: cutover, state: verified}}" in result.stdout
    assert '-> {pause_if: {metric: error_rate_5m, op: ">", value: 0.5, unit: "%"}}' in result.stdout


@pytest.mark.parametrize("text, kind", [
    ("dont touch more than 3 clusters at the same time", "max_touched"),
    ("pause when error_rate_5m goes above 0.5%", "metric"),
    ("never cutover a db unless it is verified", "precondition"),
    ("be nice", None),
    ("", None),
])
def test_closest_form_always_parses(text, kind):
    """closest_form gives a sentence the engine understands, keeping the text's names and numbers."""
    form = closest_form(text)
    parsed = parse(form)
    assert parsed.kind != "unenforced"
    if kind:
        assert parsed.kind == kind
    if kind == "metric":
        assert (parsed.metric, parsed.value, parsed.percent) == ("error_rate_5m", 0.5, True)
    if kind == "precondition":
        assert (parsed.step, parsed.state) == ("cutover", "verified")


@pytest.mark.parametrize("name", ["pg16-fleet.yaml", "k8s-rollout.yaml", "tls-rotation.yaml", "demo/ledger.yaml"])
def test_example_ledgers_pass_check(name):
    """The examples people start from have no problem (their real commands are not run)."""
    result = handoff("check", ROOT / "ledgers" / name)
    assert result.returncode == 0, result.stdout


def test_analysis_without_text_still_finds_everything():
    """No text (a store that cannot export): the same findings, only without places."""
    from engine.codec import strict

    raw = strict.load(GOOD.replace("from: checked", "from: chekced"), "x.yaml")
    found = analyse(Ledger.model_validate(raw), None, "x.yaml")
    assert [f.code for f in found if f.severity == "error"] == ["from-unknown", "from-unreachable"]
    assert found[0].line is None and found[0].text().startswith("x.yaml: runbook step switch")


# -- handoff resume refuses what can never proceed ---------------------------------------


def _resume(path: Path):
    return handoff("resume", "--ledger", path, timeout=60)


def _journal(path: Path) -> list[dict]:
    jp = Path(journal_path(str(path)))
    return [json.loads(line) for line in jp.read_text().splitlines()] if jp.exists() else []


@pytest.mark.parametrize("broken", [
    GOOD.replace("run: [echo, switch, \"{target}\"]", "run: [echo, switch, \"{service}\"]"),
    GOOD.replace("run: [echo, switch", "runn: [echo, switch"),
    GOOD.replace("from: checked", "from: chekced").replace("svc-02: {state: queued}", "svc-02: {state: checked}"),
    GOOD.split("runbook:")[0] + "targets:\n  svc-01: {state: queued}\n",
], ids=["placeholder", "misspelt-key", "stalled-state", "no-runbook"])
def test_resume_exits_2_on_a_ledger_that_can_never_proceed(tmp_path, broken):
    """The four ledgers of the report: exit 2 with the reason; the ledger is byte-identical,
    no lease was taken, and the journal holds exactly the one record that says why."""
    path = write(tmp_path, broken)
    before = path.read_bytes()
    result = _resume(path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "can never proceed as written" in result.stderr
    assert path.read_bytes() == before
    records = _journal(path)
    assert [r["kind"] for r in records] == ["session_refused"]
    assert not (tmp_path / "ledger.yaml.heartbeat").exists()


def test_resume_still_exits_0_when_only_people_or_nothing_is_left(tmp_path):
    """Waiting on people (an approval) or nothing left: exit 0, as before."""
    path = write(tmp_path, GOOD.replace("svc-01: {state: queued}", "svc-01: {state: deployed}").replace(
        "svc-02: {state: queued}", "svc-02: {state: done}"))
    first = _resume(path)
    assert first.returncode == 0, first.stdout
    assert FileStore(str(path)).read().targets["svc-01"].state == "awaiting_approval"
    done = write(tmp_path, GOOD.split("runbook:")[0] + "targets:\n  svc-01: {state: done}\n", "done.yaml")
    assert _resume(done).returncode == 0  # no runbook, but nothing is left to do either
