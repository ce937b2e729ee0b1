"""Bad input, round two (issues 19 and 27): each is refused at once with file:line (where
there is one) and what to do, no traceback, and the file on disk unchanged; or, for
what is not an error (a hash PyYAML wrote bare, a BOM, a tab-indented comment with
CRLF), read and written as the file says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, cli_env

HEAD = "task: t\ntargets:\n  a: {state: queued}\n"


def run(tmp_path: Path, *args, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=str(tmp_path), env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")),
                          stdin=subprocess.DEVNULL)


REFUSED = {
    "budget_typo": (HEAD + "budget: {stepz: 3}\n", ":4:9:", ["unknown key 'stepz' in budget", "steps, minutes"]),
    "budget_bool": (HEAD + "budget: {steps: true}\n", ":4:9:", ["budget.steps is true, not a number"]),
    "infinite": (HEAD + "budget: {minutes: 1e999}\n", ":4:19:", ["too big to be a number", "write a finite number"]),
    "infinite_in_a_target": ("task: t\ntargets:\n  a: {state: queued, size: -1e999}\n", ":3:", ["infinite"]),
    "unclosed_bracket": ("task: t\ntargets: [\n  a\nowner_shift: x\nfoo: bar\n", ":2:10:", ["`[` is never closed", "close it"]),
    # An editor that indents with a tab: libyaml says only "cannot start any token" (or names the tab).
    "tab_indent": ("task: t\ntargets:\n\ta: {state: queued}\n", ":3:1:",
                   ["the character there is a tab: YAML indents with spaces only, so replace the tab with spaces"]),
    # The model's own name for `from`: read as `from`, then lost when the engine rewrote the step.
    "python_name_of_from": ("task: t\nrunbook:\n  steps:\n    - {name: check, from_: queued, to: checked, run: [x]}\n"
                            "targets:\n  a: {state: queued}\n", ":4:7:",
                            ["`from_` is not a key of a runbook step: write `from:`"]),
    # Below 0 is no old copy (which would be "went back in time"): the engine never wrote it.
    "negative_revision": ("task: t\nrevision: -3\ntargets:\n  a: {state: queued}\n", ":2:11:",
                          ["revision is -3, but the engine counts its writes from 0", "or 0 for a new ledger"]),
    "tab_indent_named": ("task: t\n\ttargets:\n  a: {state: queued}\n", ":2:1:",
                         ["tab character", "; YAML indents with spaces only, so replace the tab with spaces"]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_place_and_what_to_do_and_unchanged(tmp_path, name):
    text, where, words = REFUSED[name]
    path = tmp_path / "ledger.yaml"
    path.write_text(text)
    for args in (("check", path), ("pause", path, "--reason", "x")):
        result = run(tmp_path, *args)
        assert result.returncode == 2, result.stdout + result.stderr
        err = result.stderr
        assert "Traceback" not in err and err.startswith(f"handoff: {path}{where}"), err
        assert all(w in err for w in words), err
        assert path.read_text() == text


def test_a_hash_pyyaml_wrote_bare_is_read_as_text_and_approvals_still_work(tmp_path):
    """`hash: 90118711690768e1` and `token: 1234567890123456` (numbers to YAML) are the strings they spell."""
    path = tmp_path / "ledger.yaml"
    data = {"task": "t", "targets": {
        "a": {"state": "checked", "approvals": [{"by": "h", "user": "u", "at": "2026-01-01T00:00:00Z", "step": "link",
                                                 "hash": "90118711690768e1"}]},
        "b": {"state": "checked", "in_flight": {"step": "link", "token": "1234567890123456"}}},
        "runbook": {"steps": [{"name": "link", "from": "checked", "to": "linked", "reversible": False, "run": ["true"]}]}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert "hash: 90118711690768e1\n" in path.read_text()  # PyYAML's own spelling: unquoted
    status = run(tmp_path, "status", path, "--json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)["targets"]
    assert shown["a"]["approvals"][0]["hash"] == "90118711690768e1" and shown["b"]["in_flight"]["token"] == "1234567890123456"
    flow = tmp_path / "flow.yaml"  # the same in a one-line target (the fast reader's path)
    flow.write_text('task: t\ntargets:\n  a: {state: checked, approvals: [{by: h, user: u, at: "2026-01-01T00:00:00Z", '
                    'step: link, hash: 1234567890123456}]}\n')
    status = run(tmp_path, "status", flow, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["targets"]["a"]["approvals"][0]["hash"] == "1234567890123456"


def test_a_bom_is_kept_on_engine_writes(tmp_path):
    path = tmp_path / "ledger.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + HEAD.encode())
    assert run(tmp_path, "pause", path, "--reason", "x").returncode == 0
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbftask: t\n") and b"paused" in raw


@pytest.mark.parametrize("end", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_tab_indented_comment_reads_the_same_with_lf_and_crlf(tmp_path, end):
    path = tmp_path / "ledger.yaml"
    text = end.join(["task: t", "targets:", "  a: {state: queued}", "\t# a comment indented with a tab",
                     "  b: {state: 'queued'}", ""])
    path.write_bytes(text.encode())
    result = run(tmp_path, "check", path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok (2 targets" in result.stdout and path.read_bytes() == text.encode()


def _odd(tmp_path: Path, kind: str) -> Path:
    if kind == "fifo":
        os.mkfifo(tmp_path / "ledger.yaml")
        return tmp_path / "ledger.yaml"
    if kind == "symlink_loop":
        os.symlink("two.yaml", tmp_path / "one.yaml")
        os.symlink("one.yaml", tmp_path / "two.yaml")
        return tmp_path / "one.yaml"
    if kind == "under_a_file":
        (tmp_path / "afile").write_text("x")
        return tmp_path / "afile" / "ledger.yaml"
    return tmp_path / ("a" * 300 + ".yaml")


ODD = {"fifo": "is a FIFO (named pipe), not a regular file", "symlink_loop": "is a symlink loop",
       "under_a_file": "a part of this path is a file, not a folder", "too_long": "longer than this system allows"}


@pytest.mark.parametrize("kind", sorted(ODD))
def test_a_path_that_is_no_ledger_file_is_refused_at_once_by_every_command(tmp_path, kind):
    """No hang (a FIFO blocks a plain open until a writer comes), no traceback: one line, exit 2."""
    path = _odd(tmp_path, kind)
    for args in (("status", path), ("check", path), ("resume", "--ledger", path), ("approve", path, "a"),
                 ("pause", path, "--reason", "x"), ("run", path, "a"), ("journal", path)):
        result = run(tmp_path, *args, timeout=20)
        assert result.returncode == 2, (args, result.stdout + result.stderr)
        assert "Traceback" not in result.stderr and ODD[kind] in result.stderr, (args, result.stderr)
    if kind == "fifo":
        import stat

        assert stat.S_ISFIFO(os.lstat(path).st_mode)  # left as it was


def test_the_tui_refuses_a_fifo_at_once(tmp_path):
    """The TUI on a FIFO: it says why and exits, instead of hanging on open()."""
    os.mkfifo(tmp_path / "ledger.yaml")
    result = subprocess.run([sys.executable, "-m", "tui.main", str(tmp_path / "ledger.yaml")], capture_output=True, text=True,
                            timeout=30, cwd=str(ROOT), env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")),
                            stdin=subprocess.DEVNULL)
    assert "is a FIFO (named pipe), not a regular file" in result.stdout + result.stderr, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
