"""Every bad ledger is refused by a mutating command with file:line:col and what to do,
exit 2, no traceback, and the file on disk byte-for-byte unchanged."""

from __future__ import annotations

import os
import stat

import pytest

from tests.conftest import RUNBOOK_LEDGER, handoff

GOOD_HEAD = "task: t\ntargets:\n"

CASES = {
    # name: (file bytes, expected "line:col" or "" when the whole file is at fault, words in the message)
    "alias": (b"task: t\nbase: &b {x: 1}\ncopy: *b\ntargets:\n  a: {state: queued}\n", ":2:7:", ["anchor/alias", "write the value out in full"]),
    "billion_laughs": (
        b"task: t\na: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\ntargets:\n  a: {state: queued}\n",
        ":2:4:",
        ["anchor/alias"],
    ),
    "deep_top": (("task: t\nx: " + "[" * 40 + "]" * 40 + "\ntargets:\n  a: {state: queued}\n").encode(), ":2:", ["nested more than 32", "flatten"]),
    "deep_target": ((GOOD_HEAD + "  a: {state: queued, x: " + "[" * 40 + "]" * 40 + "}\n").encode(), ":3:", ["nested more than 32", "flatten"]),
    "dup_top": (b"task: t\ntask: u\ntargets:\n  a: {state: queued}\n", ":2:1:", ["duplicate key 'task'", "first at line 1", "remove or rename"]),
    "dup_target": ((GOOD_HEAD + "  a: {state: queued}\n  b: {state: queued}\n  a: {state: done}\n").encode(), ":5:3:", ["duplicate key 'a'", "first at line 3"]),
    "dup_target_block": ((GOOD_HEAD + "  a:\n    state: queued\n  a:\n    state: done\n").encode(), ":5:3:", ["duplicate key 'a'"]),
    "dup_in_target": ((GOOD_HEAD + "  a: {state: queued, reason: x, state: done}\n").encode(), ":3:33:", ["duplicate key 'state'"]),
    "dup_in_block_target": ((GOOD_HEAD + "  a:\n    state: queued\n    state: done\n").encode(), ":5:5:", ["duplicate key 'state'"]),
    "not_utf8": (b"task: caf\xe9\ntargets:\n  a: {state: queued}\n", ":1:10:", ["not UTF-8", "0xe9", "save the file as UTF-8"]),
    "nul": (b"task: t\ntargets:\n  a: {state: que\x00ued}\n", ":3:17:", ["NUL byte"]),
    "unknown_state": ((GOOD_HEAD + "  a: {state: queued}\n  b: {state: finished}\n").encode(), ":4:", ["'finished'", "valid states: awaiting_approval, blocked, checked, done, failed, in_progress, queued, replicating, verified"]),
    "missing_task": (b"targets:\n  a: {state: queued}\n", ":1:1:", ["`task` is required"]),
    "missing_targets": (b"task: t\n", ":1:1:", ["`targets` is required"]),
    "syntax_flow": ((GOOD_HEAD + "  a: {state: queued\n  b: {state: queued}\n").encode(), ":3:", ["is never closed", "close it"]),
    "syntax_indent": (b"task: t\n targets:\n  a: {state: queued}\n", ":2:", ["fix the YAML syntax there"]),
    "tag": (b"task: !!python/object:os.system x\ntargets:\n  a: {state: queued}\n", ":1:7:", ["explicit tag", "remove it"]),
    "not_a_mapping": (b"- task\n- targets\n", ":1:1:", ["must be a mapping"]),
    "targets_not_mapping": (b"task: t\ntargets: [a, b]\n", ":2:", ["targets"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_ledger_is_refused_with_place_and_advice_and_left_unchanged(tmp_path, name):
    """A mutating command on a bad ledger exits 2 with path:line:col and advice; the bytes on disk do not change."""
    raw, where, words = CASES[name]
    path = tmp_path / "ledger.yaml"
    path.write_bytes(raw)
    result = handoff("approve", path, "a", "--as", "bob")
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"handoff: {path}{where}"), err
    for word in words:
        assert word in err, (word, err)
    assert path.read_bytes() == raw
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.yaml"]  # no lock, journal or temp file either


def test_file_over_the_size_cap_is_refused_unread(tmp_path):
    """A ledger over 64 MiB is refused with the cap and advice, and left as it is."""
    path = tmp_path / "ledger.yaml"
    with open(path, "wb") as fh:
        fh.write(b"task: t\ntargets:\n  a: {state: queued}\n# ")
        fh.write(b"x" * (64 * 1024 * 1024))
    size = os.path.getsize(path)
    result = handoff("approve", path, "a")
    assert result.returncode == 2
    assert "over 64 MiB are refused" in result.stderr and "journal" in result.stderr
    assert os.path.getsize(path) == size


def test_bad_ledger_status_and_check_exit_2_too(tmp_path):
    """Reading commands also exit 2 with the place, for the same broken file."""
    path = tmp_path / "ledger.yaml"
    path.write_bytes(CASES["dup_target"][0])
    for args in (("status", path), ("status", path, "--json"), ("check", path)):
        result = handoff(*args)
        assert result.returncode == 2 and f"{path}:5:3:" in result.stderr, (args, result.stderr)


def test_truncated_ledger_is_refused_until_removal_is_accepted(tmp_path):
    """Fewer targets than the last engine write: approve is refused naming them (exit 1, file unchanged); `check --accept-removal` lets work go on."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    assert handoff("note", path, "--set", "engine write").returncode == 0
    text = path.read_text()
    cut = text[: text.index("  db-4:")]  # db-4 and db-5 lost; handoff_note too
    path.write_text(cut)
    result = handoff("approve", path, "db-1", "--as", "bob")
    assert result.returncode == 1, result.stderr
    assert "db-4, db-5" in result.stderr and "--accept-removal" in result.stderr and "truncated" in result.stderr
    assert path.read_text() == cut
    check = handoff("check", path)
    assert check.returncode == 1 and "db-4, db-5" in check.stdout
    assert path.read_text() == cut
    accepted = handoff("check", path, "--accept-removal", "--as", "bob")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "3 targets remain" in accepted.stdout
    assert handoff("approve", path, "db-1", "--as", "bob").returncode == 0


def test_symlinked_ledger_stays_a_link_and_mode_is_kept(tmp_path):
    """`handoff approve` through a symlink writes the real file, keeps the link and the real file's mode."""
    real = tmp_path / "real.yaml"
    real.write_text(RUNBOOK_LEDGER)
    os.chmod(real, 0o600)
    link = tmp_path / "ledger.yaml"
    link.symlink_to(real)
    result = handoff("approve", link, "db-1", "--as", "bob")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o600
    assert "approvals:" in real.read_text()
    assert (tmp_path / "real.yaml.journal.jsonl").exists()


def test_unreadable_path_is_a_one_line_error(tmp_path):
    """A missing file or a folder gives exit 2 with one line saying what is wrong."""
    for path, words in ((tmp_path / "nope.yaml", "no such ledger file"), (tmp_path, "is a folder")):
        result = handoff("approve", path, "a")
        assert result.returncode == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.stderr
