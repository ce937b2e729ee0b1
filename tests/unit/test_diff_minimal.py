"""Engine writes change only what changed: the cases reproduced in issue 8 (comments lost,
the layout re-written, numbers mangled, defaults added, a human's note overwritten)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from engine.codec import strict
from engine.codec.document import parse_document
from engine.codec.fast import FastReader
from engine.errors import LedgerInvalid
from engine.ledger import ops
from engine.store.file import FileStore
from tests.conftest import ROOT, handoff

ALICE = ops.Who("alice", "alice")

# The ledger: eleven comment lines (a header, above invariants, inside targets,
# at the end of lines), a one-line-per-step runbook without `retries`, a folded note.
HAND_WRITTEN = """\
# fleet upgrade, reviewed in git
# owner: platform
task: pg-upgrade   # as in the ticket
started: 2026-09-09T14:00Z
# the rules we agreed with the app team
invariants:
  - never touch more than 2 dbs concurrently   # PLAT-4400
runbook:
  # one step a line
  steps:
    - {name: check, from: queued, to: checked, reversible: true, run: "echo check {target}"}
    # link is irreversible
    - {name: link, from: checked, to: replicating, run: "echo link {target}"}
targets:
  # the first batch
  db-1: {state: done, checkpoint: 1.30}
  db-2: {state: queued}   # app team says wait for Monday
  # db-3 waits on a ticket
  db-3: {state: blocked, reason: "PLAT-4412"}

handoff_note: >
  Started db-1 at 01:58Z.
  Do NOT retry link on db-1.
# end of file
"""


def _diff(old: str, new: str) -> list[str]:
    return [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def _comments(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line]


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.yaml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    return path


def test_pause_then_unpause_changes_only_the_paused_lines_and_revision(ledger):
    """A pause adds the `paused` lines and `revision`; the unpause takes `paused` away: nothing else moves."""
    store = FileStore(str(ledger))
    store.transact(lambda l: ops.pause(l, ALICE, "app team says wait"))
    paused = ledger.read_text()
    changed = _diff(HAND_WRITTEN, paused)
    assert changed[0] == "+revision: 1" and changed[1] == "+paused:"
    assert all(line.startswith("+  ") for line in changed[2:]) and len(changed) == 5, changed
    store.transact(lambda l: ops.unpause(l, ALICE))
    assert _diff(HAND_WRITTEN, ledger.read_text()) == ["+revision: 2"]


def test_the_article_fleet_keeps_its_comments_and_runbook_through_pause_and_unpause(tmp_path):
    """ledgers/pg16-fleet.yaml (block runbook, comments inside it, a folded note): pause + unpause adds `revision` only."""
    path = tmp_path / "pg16-fleet.yaml"
    original = (ROOT / "ledgers" / "pg16-fleet.yaml").read_text(encoding="utf-8")
    path.write_text(original, encoding="utf-8")
    store = FileStore(str(path))
    store.transact(lambda l: ops.pause(l, ALICE, "maintenance"))
    store.transact(lambda l: ops.unpause(l, ALICE))
    assert _diff(original, path.read_text(encoding="utf-8")) == ["+revision: 2"]


def test_every_comment_survives_every_kind_of_write(ledger):
    """Pause, a target change, a note and an approval later, all eleven comment lines are still there, in order."""
    before = _comments(HAND_WRITTEN)
    assert len(before) == 11
    store = FileStore(str(ledger))
    store.transact(lambda l: ops.pause(l, ALICE, "wait"))
    store.transact(lambda l: setattr(l.targets["db-2"], "state", "checked"))
    store.transact(lambda l: ops.set_note(l, ALICE, "db-2 checked; db-3 still blocked.\n", base=None))
    store.transact(lambda l: ops.unpause(l, ALICE))
    assert _comments(ledger.read_text()) == before


def test_a_rewritten_target_keeps_its_comments_above_it_and_its_first_line_comment(tmp_path):
    """Comments inside a target the engine rewrites move above it, in order; the one on its first line stays there."""
    path = tmp_path / "ledger.yaml"
    path.write_text(
        "task: t\ntargets:\n"
        "  db-1:   # the big one\n"
        "    state: queued   # checked by hand on Friday\n"
        "    # do not forget the replica\n"
        "    checkpoint: '0/1'\n"
        "  db-2: {state: queued,   # inside a flow mapping\n"
        "    reason: x}\n",
        encoding="utf-8",
    )
    FileStore(str(path)).transact(lambda l: (setattr(l.targets["db-1"], "state", "checked"),
                                             setattr(l.targets["db-2"], "state", "checked")))
    assert path.read_text().split("targets:\n")[1] == (
        "  # checked by hand on Friday\n"
        "  # do not forget the replica\n"
        "  db-1: {state: checked, checkpoint: \"0/1\"}   # the big one\n"
        "  db-2: {state: checked, reason: x}   # inside a flow mapping\n"
    )


def test_one_target_change_rewrites_that_target_only(ledger):
    """Changing db-2 rewrites db-2's line (its trailing comment kept) and adds `revision`; block and flow layout elsewhere stay."""
    FileStore(str(ledger)).transact(lambda l: setattr(l.targets["db-2"], "state", "checked"))
    assert _diff(HAND_WRITTEN, ledger.read_text()) == [
        "+revision: 1",
        "-  db-2: {state: queued}   # app team says wait for Monday",
        "+  db-2: {state: checked}   # app team says wait for Monday",
    ]


def test_defaults_the_human_left_out_are_not_written(ledger):
    """A state change and an approval later, `retries: 0` and `reversible: false` appear nowhere: the runbook is untouched."""
    store = FileStore(str(ledger))
    store.transact(lambda l: setattr(l.targets["db-2"], "state", "checked"))
    store.transact(lambda l: ops.approve(l, "db-2", ops.Who("carol", "carol"), step="link", comment=None,
                                         ledger_dir=str(ledger.parent)))
    text = ledger.read_text()
    assert "retries" not in text and "reversible: false" not in text
    assert "    - {name: link, from: checked, to: replicating, run: \"echo link {target}\"}\n" in text
    changed = _diff(HAND_WRITTEN, text)
    assert changed[0] == "+revision: 2"
    assert all(line[1:].startswith(("  db-2: ", "         ")) for line in changed[1:]), changed


def test_float_looking_checkpoints_and_names_keep_their_text(tmp_path):
    """`checkpoint: 1.30` is "1.30"; `1e3` stays `1e3`; target `1.10` beside `1.1` is no duplicate and keeps its name."""
    path = tmp_path / "ledger.yaml"
    text = ("task: t\ntargets:\n"
            "  1.10: {state: done, checkpoint: 1.30}\n"
            "  1.1: {state: queued, checkpoint: 1e3}\n"
            "  db-9:\n    state: queued\n    checkpoint: 0.50\n")
    path.write_text(text, encoding="utf-8")
    store = FileStore(str(path))
    ledger = store.read()
    assert list(ledger.targets) == ["1.10", "1.1", "db-9"]
    assert [t.checkpoint for t in ledger.targets.values()] == ["1.30", "1e3", "0.50"]
    store.transact(lambda l: setattr(l.targets["1.10"], "next_action", "verify"))
    after = path.read_text()
    assert "  1.10: {state: done, checkpoint: 1.30, next_action: verify}\n" in after
    assert "  1.1: {state: queued, checkpoint: 1e3}\n" in after
    store.transact(lambda l: setattr(l.targets["db-9"], "next_action", "check"))
    assert "  db-9: {state: queued, checkpoint: 0.50, next_action: check}\n" in path.read_text()
    fresh = FileStore(str(path)).read()  # through the parse cache
    assert [t.checkpoint for t in fresh.targets.values()] == ["1.30", "1e3", "0.50"]


def test_a_checkpoint_written_as_a_number_is_no_false_drift():
    """The model reads a number where it wants text as the characters written (1.30 is not 1.3)."""
    data = parse_document("task: t\ntargets:\n  a: {state: replicating, checkpoint: 1.30}\n", "l.yaml").data
    assert str(data["targets"]["a"]["checkpoint"]) == "1.30"
    assert strict.load("a: [1.30, 1e3, +5, -0, 7, 1.5]", "x")["a"] == [1.3, 1000.0, 5, 0, 7, 1.5]
    assert [str(v) for v in strict.load("a: [1.30, 1e3, +5, -0, 7, 1.5]", "x")["a"]] == ["1.30", "1e3", "+5", "-0", "7", "1.5"]


def test_duplicate_names_are_still_refused(tmp_path):
    """Two spellings of one name (`db-1` and `"db-1"`) are one key: still an error naming the line."""
    with pytest.raises(LedgerInvalid, match="l.yaml:4:3: duplicate key"):
        parse_document('task: t\ntargets:\n  db-1: {state: queued}\n  "db-1": {state: done}\n', "l.yaml")


def test_the_fast_reader_takes_lines_with_comments():
    """A target line ending in a comment, and comment lines between targets, do not send anything to the YAML loader."""
    lines = ["  # first batch", "  db-1: {state: done, reason: \"a # b\"}   # app team: wait", "", "# col 0", "  db-2: {state: queued}"]
    targets, _, slow, spans = FastReader().read_lines(lines)
    assert slow == []
    assert targets == {"db-1": {"state": "done", "reason": "a # b"}, "db-2": {"state": "queued"}}
    assert spans == {"db-1": (1, 1), "db-2": (4, 4)}


@pytest.mark.parametrize("style,old,expect", [
    (">", "handoff_note: >\n  old words\n  more words\n", "handoff_note: >\n  new words, one paragraph\n"),
    ("|", "handoff_note: |\n  old\n  lines\n", "handoff_note: |\n  new words, one paragraph\n"),
    ("plain", "handoff_note: old words\n", "handoff_note: new words, one paragraph\n"),
    ("quoted", 'handoff_note: "old: words"\n', 'handoff_note: "new words, one paragraph\\n"\n'),
])
def test_a_new_note_keeps_the_old_notes_style(tmp_path, style, old, expect):
    """The note written over a folded, literal, plain or quoted one is written the same way."""
    path = tmp_path / "ledger.yaml"
    path.write_text("task: t\ntargets:\n  a: {state: queued}\n" + old, encoding="utf-8")
    text = "new words, one paragraph\n" if style != "plain" else "new words, one paragraph"
    FileStore(str(path)).transact(lambda l: ops.set_note(l, ALICE, text, base=None))
    assert expect in path.read_text()
    assert FileStore(str(path)).read().handoff_note == text


def test_a_note_that_needs_another_style_gets_it(tmp_path):
    """A plain note replaced by text with line breaks is written as a literal block, not forced plain."""
    path = tmp_path / "ledger.yaml"
    path.write_text("task: t\ntargets:\n  a: {state: queued}\nhandoff_note: short\n", encoding="utf-8")
    FileStore(str(path)).transact(lambda l: ops.set_note(l, ALICE, "line one\nline two\n", base=None))
    assert "handoff_note: |\n  line one\n  line two\n" in path.read_text()


def test_the_replaced_note_is_kept_with_its_author_time_and_lines(ledger):
    """A session's note replaces the human's; the human's stays as previous_note, as they wrote it; a second session keeps it."""
    store = FileStore(str(ledger))
    store.transact(lambda l: ops.set_note(l, ALICE, "Started db-1.\nDo NOT retry link on db-1.\n", base=None))
    store.transact(lambda l: ops.set_note(l, ops.Who("agent:s1", "root"), "Session s1 ended.\n", base=None))
    ledger_now = FileStore(str(ledger)).read()
    assert ledger_now.previous_note.text == "Started db-1.\nDo NOT retry link on db-1.\n"
    assert ledger_now.previous_note.by == "alice" and ledger_now.previous_note.at
    store.transact(lambda l: ops.set_note(l, ops.Who("agent:s2", "root"), "Session s2 ended.\n", base=None))
    assert FileStore(str(ledger)).read().previous_note.by == "alice"


def test_an_author_revising_their_own_note_does_not_push_out_the_previous_one(ledger):
    """alice rewriting her own note leaves previous_note as it was (the article's note, not her first draft)."""
    store = FileStore(str(ledger))
    store.transact(lambda l: ops.set_note(l, ALICE, "first\n", base=None))
    before = FileStore(str(ledger)).read().previous_note
    store.transact(lambda l: ops.set_note(l, ALICE, "second\n", base=None))
    after = FileStore(str(ledger)).read().previous_note
    assert before is not None and before.text.startswith("Started db-1") and after == before


def test_note_previous_and_status_json_show_the_previous_note(ledger):
    """`handoff note --previous` prints it; `handoff status --json` carries it."""
    assert handoff("note", ledger, "--set", "bob's note", "--as", "bob").returncode == 0
    shown = handoff("note", ledger, "--previous")
    assert shown.returncode == 0
    assert shown.stdout == "Started db-1 at 01:58Z. Do NOT retry link on db-1.\n"
    status = json.loads(handoff("status", ledger, "--json").stdout)
    assert status["previous_note"] == {"text": "Started db-1 at 01:58Z. Do NOT retry link on db-1.\n", "by": None, "at": None}
    assert status["handoff_note"] == "bob's note"


def test_a_crlf_file_stays_crlf(tmp_path):
    """A ledger saved with Windows line ends gets the engine's lines with the same ends."""
    path = tmp_path / "ledger.yaml"
    path.write_bytes(b"task: t\r\ntargets:\r\n  a: {state: queued}  # wait\r\n  b: {state: queued}\r\n")
    FileStore(str(path)).transact(lambda l: setattr(l.targets["a"], "state", "checked"))
    assert path.read_bytes() == b"task: t\r\nrevision: 1\r\ntargets:\r\n  a: {state: checked}  # wait\r\n  b: {state: queued}\r\n"


def test_a_flow_ledger_is_rewritten_whole_and_still_reads_the_same(tmp_path):
    """A ledger that is one flow mapping has no lines to keep apart: it is written canonically, data intact."""
    path = tmp_path / "ledger.yaml"
    path.write_text("# kept\n{task: t, targets: {a: {state: queued}, b: {state: done}}}\n", encoding="utf-8")
    FileStore(str(path)).transact(lambda l: setattr(l.targets["a"], "state", "checked"))
    text = path.read_text()
    assert text.startswith("# kept\n")
    ledger = FileStore(str(path)).read()
    assert ledger.targets["a"].state == "checked" and ledger.targets["b"].state == "done" and ledger.revision == 1


def test_a_file_without_a_final_newline_gets_one_only_where_the_engine_writes(tmp_path):
    """A last line the engine rewrites ends with a newline, as every line it writes does."""
    path = tmp_path / "ledger.yaml"
    path.write_text("task: t\ntargets:\n  a: {state: queued}", encoding="utf-8")
    FileStore(str(path)).transact(lambda l: setattr(l.targets["a"], "reason", "x"))
    assert path.read_text() == "task: t\nrevision: 1\ntargets:\n  a: {state: queued, reason: x}\n"


def test_a_session_keeps_the_humans_note_as_previous_note_and_every_comment(tmp_path):
    """`handoff resume` on a hand-written ledger: its note replaces alice's, which stays as previous_note; no comment is lost."""
    from session_kit import resume, tool, tool_ledger

    path = tool_ledger(tmp_path, [], {"a": {}})
    run = json.dumps(tool("say", "ok"))
    path.write_text(
        "# checked in by alice\ntask: tool-test   # one target\nrunbook:\n  steps:\n"
        f"    - {{name: check, from: queued, to: checked, reversible: true, run: {run}}}   # safe to repeat\n"
        "targets:\n  # the only one\n  a: {state: queued}   # app team says go\n"
        "handoff_note: >\n  Do NOT run link on a\n  before Monday.\n"
        "handoff_note_by: alice\nhandoff_note_at: 2026-09-09T14:00Z\n",
        encoding="utf-8",
    )
    before = _comments(path.read_text())
    result = resume(path, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = FileStore(str(path)).read()
    assert ledger.handoff_note_by.startswith("agent:")
    assert (ledger.previous_note.text, ledger.previous_note.by, ledger.previous_note.at) == (
        "Do NOT run link on a before Monday.\n", "alice", "2026-09-09T14:00Z")
    assert _comments(path.read_text()) == before
    assert "previous_note:\n  text: >\n    Do NOT run link on a\n    before Monday.\n" in path.read_text()
