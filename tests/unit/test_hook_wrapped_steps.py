"""A runbook step's script run through a shell function, an alias, a script's own arguments, or a
copy named only inside code: `handoff hook pre-tool-use` fed Claude Code's JSON, as a subprocess.

A function's (or `bash -c`'s, or a script file's) body is judged where it is called, with the
call's words in place of `"$@"`, `$1`, ...; an alias as its text followed by the call's words.
Where the hook cannot work those words out (`shift`, `"${@:2}"`, what `xargs` reads) and the
command runs a step's script, it is refused, naming the script. Each denial leaves the ledger
byte-identical and the world without the step's run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from session_kit import counts, demo_copy
from test_hooks import bash, verdict


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Path]:
    """The demo fleet with a byte copy of the step's script (mig.py) and a script that passes its
    arguments on to sim.py (go.sh); the session's lease taken by a first call (a write)."""
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"
    (ledger.parent / "mig.py").write_bytes((ledger.parent / "sim.py").read_bytes())
    (ledger.parent / "go.sh").write_text('python3 sim.py "$@"\n')
    bash(ledger, world, "true")
    return ledger, world


def _linked(world: Path) -> int:
    return counts(world).get("db-19", {}).get("link_runs", 0)


@pytest.mark.parametrize("command", [
    'f() { python3 sim.py "$@"; }; f link db-19',
    'function f { python3 sim.py "$@"; }; f link db-19',
    'function f() {\n  python3 sim.py "$@"\n}\nf link db-19',
    'f() ( python3 sim.py "$@" ); f link db-19',
    'f() { python3 sim.py $1 "$2"; }; f link db-19',
    'f() { python3 sim.py "${1}" ${2}; }; f link db-19',
    'f() { python3 mig.py "$@"; }; f link db-19',
    'g() { python3 sim.py "$@"; }; f() { g link "$1"; }; f db-19',
    'f() { python3 sim.py "$@"; }; timeout 60 f link db-19',
    "alias go='python3 sim.py'; go link db-19",
    "alias go='python3 sim.py'\ngo link db-19",
    "alias go='python3 mig.py'; go link db-19",
    'bash -c \'python3 sim.py "$@"\' _ link db-19',
    "sh -c 'python3 \"$0\" link db-19' sim.py",
    "bash go.sh link db-19",
    "./go.sh link db-19",
], ids=["function", "function-keyword", "function-lines", "function-subshell", "positional", "braced-positional",
        "function-runs-copy", "function-calls-function", "function-through-wrapper", "alias", "alias-lines",
        "alias-runs-copy", "bash-c-arguments", "sh-c-dollar-zero", "script-arguments", "script-run-as-program"])
def test_a_step_s_script_behind_a_function_or_alias_is_judged_with_the_call_s_words(fleet, command) -> None:
    """`f() { python3 sim.py "$@"; }; f link db-19` ran the irreversible link on db-19 unjudged: the body's
    `"$@"` has no step words, and the call names no step's script. Judged as the body with the call's words,
    it is the step's command run raw: denied with the `handoff run` line."""
    ledger, world = fleet
    if command.startswith("./"):
        (ledger.parent / "go.sh").chmod(0o755)
    before = ledger.read_bytes()
    kind, reason = verdict(bash(ledger, world, command))
    assert kind == "deny", (command, reason)
    assert "runbook step link's command for db-19" in reason, reason
    assert f"run it as `handoff run {ledger} db-19 link`" in reason, reason
    assert ledger.read_bytes() == before
    assert _linked(world) == 0


@pytest.mark.parametrize("command, word", [
    ('f() { shift; python3 sim.py "$@"; }; f x link db-19', "$@"),
    ('f() { python3 sim.py "${@:2}"; }; f x link db-19', "${@:2}"),
    ('f() { set -- link "$1"; python3 mig.py "$@"; }; f db-19', "$@"),
    ('python3 sim.py "$@"', "$@"),
    ("echo link db-19 | xargs python3 sim.py", "$XARGS"),
], ids=["shift", "slice", "set", "top-level", "xargs-words"])
def test_a_step_s_script_given_words_the_hook_cannot_work_out_is_denied(fleet, command, word) -> None:
    """Where the call's words cannot be put in place (after `shift` or `set --`, a slice, the line's own
    positional parameters, what `xargs` reads), a command that runs a step's script is refused, naming the
    script and the words."""
    ledger, world = fleet
    before = ledger.read_bytes()
    kind, reason = verdict(bash(ledger, world, command))
    assert kind == "deny", (command, reason)
    assert "sim.py" in reason and word in reason and "words the hook cannot work out" in reason, reason
    assert f"`handoff run {ledger} TARGET STEP`" in reason, reason
    assert ledger.read_bytes() == before
    assert _linked(world) == 0


@pytest.mark.parametrize("command", [
    'f() { python3 sim.py "$@"; }; f counts',
    'f() { python3 sim.py "$@"; }',
    'f() { ls -la "$@"; }; f link db-19',
    "alias ll='ls -la'; ll db-19",
    'bash -c \'python3 sim.py "$@"\' _ counts',
    "bash go.sh counts",
    'for f in sim.py mig.py; do wc -l "$f"; done',
], ids=["function-no-step", "definition-only", "function-other-program", "alias-other-program", "bash-c-no-step",
        "script-no-step", "loop-reads"])
def test_functions_and_aliases_that_run_no_step_pass(fleet, command) -> None:
    """A function or alias that runs no step's command for a target is no objection."""
    ledger, world = fleet
    assert verdict(bash(ledger, world, command)) == ("none", ""), command


@pytest.mark.parametrize("command", [
    "python3 -c \"import os; os.system('python3 mig.py link db-19')\"",
    "python3 -c \"import subprocess; subprocess.run(['python3', 'mig.py', 'link', 'db-19'])\"",
    "python3 - <<'EOF'\nimport os\nos.system(\"python3 ./mig.py link db-19\")\nEOF",
    "perl -e 'system(\"python3 mig.py link db-19\")'",
], ids=["os-system", "subprocess", "here-doc", "perl"])
def test_a_copy_of_a_step_s_script_named_inside_code_is_denied(fleet, command) -> None:
    """A byte copy of the step's script named only inside code (`os.system('python3 mig.py link db-19')`)
    ran the link unjudged: the copy was compared only when a command's own words named it. A path-like word
    in the code's strings is compared too."""
    ledger, world = fleet
    before = ledger.read_bytes()
    kind, reason = verdict(bash(ledger, world, command))
    assert kind == "deny", (command, reason)
    assert "runbook step link's command for db-19" in reason and "is sim.py under another name" in reason, reason
    assert ledger.read_bytes() == before
    assert _linked(world) == 0


def test_code_that_names_a_copy_for_no_step_passes(fleet) -> None:
    ledger, world = fleet
    for command in ("python3 -c \"print(open('mig.py').read().count('link'))\"",
                    "python3 -c \"import os; os.system('python3 mig.py counts')\""):
        assert verdict(bash(ledger, world, command)) == ("none", ""), command

