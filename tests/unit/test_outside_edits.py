"""Edits made outside the engine are journaled field by field, attributed, flagged, and stop a session.

Five targets marked `done` by a one-line `python3 -c`, by `sed -i` and by `perl -pi`
(nothing run): the next engine write journals an `external_edit` record naming each
target, field, old and new value, the file's owner and mtime; the targets are flagged
`changed_outside` and shown in `handoff status`; a session stops with exit 3 and
nothing runs; `handoff reconcile` by a person clears the flag.
"""

from __future__ import annotations

import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from session_kit import counts, demo_copy, handoff, journal, load, resume

NAMES = [f"db-{n}" for n in range(60, 65)]


def _edit(ledger: Path, how: str) -> None:
    if how == "python":
        code = ("import re,sys; p=sys.argv[1]; t=open(p).read(); "
                "t=re.sub(r'(db-6[0-4]:\\n\\s+state:) queued', r'\\1 done', t); open(p,'w').write(t)")
        subprocess.run([sys.executable, "-c", code, str(ledger)], check=True)
    elif how == "sed":
        subprocess.run(["sed", "-Ei", "/^  db-6[0-4]:/{n;s/state: queued/state: done/}", str(ledger)], check=True)
    else:
        subprocess.run(["perl", "-0pi", "-e", "s/(db-6[0-4]:\\n\\s+state:) queued/$1 done/g", str(ledger)], check=True)


@pytest.mark.parametrize("how", ["python", "sed", "perl"])
def test_five_targets_marked_done_by_hand_are_journaled_flagged_and_stop_a_session(tmp_path: Path, how: str) -> None:
    """The edit is diffed and attributed in the journal, flagged in status, and the session exits 3 running nothing."""
    ledger = demo_copy(tmp_path, {name: {"state": "queued"} for name in [*NAMES, "db-65"]})
    world = tmp_path / "world"
    assert handoff("pause", str(ledger), "--reason", "setup", "--as", "alice", world=world).returncode == 0
    assert handoff("unpause", str(ledger), "--as", "alice", world=world).returncode == 0  # the engine's own write
    _edit(ledger, how)
    assert [load(ledger)["targets"][n]["state"] for n in NAMES] == ["done"] * 5, ledger.read_text()
    session = resume(ledger, world=world)
    assert session.returncode == 3, session.stdout + session.stderr
    assert "changed outside the engine" in session.stdout
    assert counts(world).get("db-65", {}).get("check_runs", 0) == 0  # the untouched queued target did not run either
    edit = next(r for r in journal(ledger) if r["kind"] == "external_edit")
    changed = {(c["target"], c["field"], c["old"], c["new"]) for c in edit["changes"]}
    assert changed == {(n, "state", "queued", "done") for n in NAMES}
    assert sorted(edit["flagged"]) == NAMES
    assert edit["owner"] == pwd.getpwuid(os.getuid()).pw_name and edit["mtime"]
    targets = load(ledger)["targets"]
    assert all(targets[n]["changed_outside"]["fields"] == ["state"] for n in NAMES)
    status = handoff("status", str(ledger), world=world)
    assert status.stdout.count("CHANGED OUTSIDE THE ENGINE") == 5, status.stdout


def test_reconcile_by_a_person_accepts_the_edit_and_a_stopping_edit_is_never_flagged(tmp_path: Path) -> None:
    """`handoff reconcile --to done` clears the flag; marking a target blocked by hand is journaled but trusted."""
    ledger = demo_copy(tmp_path, {"db-60": {"state": "queued"}, "db-61": {"state": "queued"}})
    world = tmp_path / "world"
    assert handoff("pause", str(ledger), "--reason", "setup", "--as", "alice", world=world).returncode == 0
    text = ledger.read_text()
    text = text.replace("db-60:\n    state: queued", "db-60:\n    state: done").replace("db-61:\n    state: queued", "db-61:\n    state: blocked")
    ledger.write_text(text)
    assert handoff("unpause", str(ledger), "--as", "alice", world=world).returncode == 0
    targets = load(ledger)["targets"]
    assert targets["db-60"]["changed_outside"] and "changed_outside" not in targets["db-61"]
    done = handoff("reconcile", str(ledger), "db-60", "--to", "done", "--reason", "checked by hand", "--as", "bob", world=world)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed_outside" not in load(ledger)["targets"]["db-60"]
    assert "CHANGED OUTSIDE" not in handoff("status", str(ledger), world=world).stdout


def test_a_target_added_by_hand_as_new_work_is_worked_and_one_added_past_the_start_is_flagged(tmp_path: Path) -> None:
    """Adding a queued target by hand is how a job grows: journaled, never flagged, and the session
    checks it. A target added as `verified`, or queued with an approval, claims what no step made:
    flagged, exit 3, nothing runs."""
    ledger = demo_copy(tmp_path, {"db-60": {"state": "queued"}})
    world = tmp_path / "world"
    assert handoff("pause", str(ledger), "--reason", "setup", "--as", "alice", world=world).returncode == 0
    ledger.write_text(ledger.read_text().replace("targets:\n", "targets:\n  db-61:\n    state: queued\n", 1))
    assert handoff("unpause", str(ledger), "--as", "alice", world=world).returncode == 0
    edit = next(r for r in journal(ledger) if r["kind"] == "external_edit")
    assert [(c["target"], c["field"], c["new"], c["untrusted"]) for c in edit["changes"]] == [("db-61", "target", "present", False)]
    assert edit["flagged"] == [] and "changed_outside" not in load(ledger)["targets"]["db-61"]
    session = resume(ledger, world=world)
    assert session.returncode != 3 and "changed outside the engine" not in session.stdout, session.stdout + session.stderr
    assert counts(world)["db-61"]["check_runs"] >= 1, counts(world)

    forged = ('  db-63:\n    state: queued\n    approvals: [{by: alice, user: alice, at: "2026-12-01T00:00:00Z", '
              'step: cutover, hash: 90118711690768e1}]\n')
    ledger.write_text(ledger.read_text().replace("targets:\n", "targets:\n  db-62:\n    state: verified\n" + forged, 1))
    session = resume(ledger, world=world)
    assert session.returncode == 3, session.stdout + session.stderr
    assert "db-62" in session.stdout and "changed outside the engine" in session.stdout
    targets = load(ledger)["targets"]
    assert targets["db-62"]["changed_outside"]["fields"] == ["target"]
    assert targets["db-63"]["changed_outside"]["fields"] == ["target"]  # queued, but with an approval it never asked
    assert not any(counts(world).get("db-62", {}).values()), counts(world)  # nothing ran on it: no cutover


def test_a_paused_ledger_with_a_target_changed_by_hand_stops_a_session_3(tmp_path: Path) -> None:
    """A target marked done by hand, then the ledger paused (the pause's write flags it): the session
    says the edit and exits 3, as a LangGraph run and a Temporal workflow do (it said "paused", exit 4,
    and never named db-60). Nothing runs."""
    ledger = demo_copy(tmp_path, {"db-60": {"state": "queued"}, "db-61": {"state": "queued"}})
    world = tmp_path / "world"
    assert handoff("note", str(ledger), "--set", "shift note", world=world).returncode == 0
    ledger.write_text(ledger.read_text().replace("db-60:\n    state: queued", "db-60:\n    state: done"))
    assert handoff("pause", str(ledger), "--reason", "incident", "--as", "alice", world=world).returncode == 0
    session = resume(ledger, world=world)
    assert session.returncode == 3, session.stdout + session.stderr
    assert "db-60 was changed outside the engine" in session.stdout, session.stdout
    assert f"handoff reconcile {shlex.quote(str(ledger))} db-60" in session.stdout, session.stdout
    assert not any(counts(world).get(n, {}).values() for n in ("db-60", "db-61")), counts(world)
    assert load(ledger)["paused"]["why"] == "incident"
