"""The pre-tool-use hook against every common spelling of writing the ledger or a file
beside it: in-place edits, editors, copies and moves onto it, links to it, interpreter
code; each denied, and the ledger on disk byte-identical afterwards."""

from __future__ import annotations

import io
import json

import pytest
from test_hook_spellings import ask, ledgers, unchanged  # noqa: F401 - fixtures shared with the spellings

ENGINE_ONLY = "written only by the engine"

WRITES = [
    "sed -Ei 's/queued/done/' {L}",
    "sed -i.bak s/queued/done/ {L}",
    "sed --in-place=.bak s/queued/done/ {L}",
    "sed -ni p {L}",
    "sed -i -e s/a/b/ ledger.yaml",
    "perl -pi -e 's/queued/done/' {L}",
    "perl -i.bak -pe 's/queued/done/' {L}",
    "perl -0777 -pi -e 's/a/b/' {L}",
    "awk -i inplace '{{print}}' {L}",
    "gawk --include=inplace '{{print}}' {L}",
    "ed {L} <<< $',s/queued/done/\\nw\\nq'",
    "ex -sc '%s/queued/done/|x' {L}",
    "vim -c ':%s/queued/done/' -c ':wq' {L}",
    "nano {L}",
    "python3 -c \"open('{L}', 'w').write('')\"",
    "python3 -c \"import pathlib; pathlib.Path('ledger.yaml').write_text('x')\"",
    "python3 -c \"import os; os.replace('/tmp/x', '{L}')\"",
    "python3 - <<'PY'\nwith open('ledger.yaml', mode='a') as f:\n    f.write('x')\nPY",
    "perl -e 'open(F, \">{L}\")'",
    "node -e \"require('fs').writeFileSync('{L}', '')\"",
    "cp /tmp/forged.yaml {L}",
    "cp -f /tmp/forged.yaml ledger.yaml",
    "cp /tmp/ledger.yaml {D}/",
    "cp -t {D} /tmp/ledger.yaml",
    "mv /tmp/forged.yaml {L}",
    "mv {L} /tmp/gone.yaml",
    "install -m 644 /tmp/forged.yaml {L}",
    "rsync -a /tmp/forged.yaml {L}",
    "tee {L} < /tmp/forged.yaml",
    "echo x | tee -a {L}.journal.jsonl",
    "dd if=/tmp/forged.yaml of={L}",
    "truncate -s 0 {L}",
    "ln -sf /tmp/forged.yaml {L}",
    "ln -s {L} /tmp/link-to-ledger",
    "echo '{{}}' > {L}",
    "cat /tmp/x >> {L}.lock",
    "echo 1 &> {L}.heartbeat",
    "exec 3> {L}",
    "rm -f {L}.journal.jsonl",
    "chmod 000 {L}",
    "sort -o {L} {L}",
    "yq -i '.targets = {{}}' {L}",
    "git checkout -- {L}",
    "git restore ledger.yaml",
    "bash -c \"sed -i s/a/b/ {L}\"",
    "echo $(cp /tmp/forged.yaml {L})",
    "sudo -u alice tee {L} < /tmp/x",
    "cd {D} && sed -i s/a/b/ ledger.yaml",
    "cd /tmp; cd {D}; cp /tmp/forged.yaml ledger.yaml",
    "sed -i s/a/b/ {D}/ledger.y*ml",
    "F={L}; perl -pi -e s/a/b/ $F",
    "(cd /tmp) && truncate -s 0 ledger.yaml",
    # A path the shell makes at run time: `$PWD`, `$HOME` and `~+` are known, any other part may be anything.
    'echo x > "$PWD/ledger.yaml.journal.jsonl"',
    "echo x > ~+/ledger.yaml",
    "echo x > $(echo ledger.yaml)",
    "f=ledger; echo x > $f.yaml",
    "echo x > `printf {D}`/ledger.yaml",
    "cp /tmp/forged.yaml ${{PWD}}/ledger.yaml",
    # A hard link is the ledger under another name: a Write or Edit on it writes the ledger.
    "cp -l {L} {D}/copy.yaml",
    "cp --link {L}.journal.jsonl /tmp/j.jsonl",
    "cp -rl {D} /tmp/copy-of-folder",
]


@pytest.mark.parametrize("line", WRITES)
def test_every_spelling_of_a_ledger_write_is_denied(ledgers, line) -> None:  # noqa: F811
    """Denied under every policy, saying the engine alone writes it; the ledger is unchanged (checked by `unchanged`)."""
    for ledger in ledgers.values():
        kind, reason = ask(ledger, line.format(L=ledger, D=ledger.parent))
        assert kind == "deny", (line, reason)
        assert ENGINE_ONLY in reason and "`handoff note`" in reason, (line, reason)


def test_a_symlink_that_points_at_the_ledger_is_followed(ledgers, tmp_path) -> None:  # noqa: F811
    """A path that is a link to the ledger is the ledger: writing through it is denied."""
    ledger = ledgers["allow"]
    link = tmp_path / "innocent.yaml"
    link.symlink_to(ledger)
    kind, reason = ask(ledger, f"sed -i s/a/b/ {link}")
    assert kind == "deny" and ENGINE_ONLY in reason
    kind, _ = ask(ledger, f"cat {link}")
    assert kind == "none"


def test_copying_a_folder_over_the_ledger_s_folder_is_denied(ledgers, tmp_path) -> None:  # noqa: F811
    """`cp -r DIR/. ops/` or `rsync -a DIR/ ops/` may overwrite the ledger: denied; into another folder: passes."""
    ledger = ledgers["allow"]
    source = tmp_path / "src"
    source.mkdir()
    kind, reason = ask(ledger, f"rsync -a {source}/ {ledger.parent}/")
    assert kind == "deny" and ENGINE_ONLY in reason
    kind, _ = ask(ledger, f"rsync -a {source}/ {tmp_path}/elsewhere/")
    assert kind == "none"


def test_a_cd_on_the_line_is_followed(ledgers) -> None:  # noqa: F811
    """From a folder above the ledger's, `cd fleet && sed -i ... ledger.yaml` writes the ledger: denied; the same
    `sed` without the `cd` names another file and passes; a `handoff run` after the `cd` still meets the guard."""
    ledger = ledgers["allow"]
    above = ledger.parent.parent
    kind, reason = ask(ledger, f"cd {ledger.parent.name} && sed -i s/a/b/ ledger.yaml", cwd=above)
    assert kind == "deny" and ENGINE_ONLY in reason
    assert ask(ledger, "sed -i s/a/b/ ledger.yaml", cwd=above)[0] == "none"
    kind, reason = ask(ledger, f"cd {ledger.parent.name}; handoff run ledger.yaml db-18 cutover", cwd=above)
    assert kind == "deny" and "the guard refuses cutover on db-18" in reason


def test_the_engines_per_user_files_are_written_by_the_engine_alone(ledgers, tmp_path, monkeypatch) -> None:  # noqa: F811
    """The hook's facts, the parse cache, the high-water marks and session nonces live in the
    engine's per-user folders (engine.host.folders): forged facts would blind the hook and a
    removed mark the rollback witness, so writing there is denied in the usual spellings;
    reading there, and writing beside them, pass."""
    from engine.hooks.protocol import run

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    facts = tmp_path / "cache" / "handoff" / "0123.hook.json"
    mark = tmp_path / "state" / "handoff" / "highwater" / "m.json"
    ledger = ledgers["allow"]
    for line in (f"echo '{{}}' > {facts}", f"cp /tmp/forged.json {facts}", f"rm -f {mark}", f"sed -i s/9/1/ {mark}",
                 f"tee {tmp_path}/state/handoff-tui/x.json < /tmp/x",
                 f"python3 -c \"open('{facts}', 'w').write('{{}}')\""):
        kind, reason = ask(ledger, line)
        assert kind == "deny" and ENGINE_ONLY in reason, (line, reason)
    for line in (f"rm -rf {tmp_path}/state", f"mv {tmp_path}/cache /tmp/elsewhere", f"cd {tmp_path} && rm -rf cache",
                 f"rsync -a --delete /tmp/empty/ {tmp_path}/state/"):  # a folder that holds them
        kind, reason = ask(ledger, line)
        assert kind == "deny" and "holds the engine's per-user files" in reason, (line, reason)
    for line in (f"cat {facts}", f"ls {tmp_path}/state/handoff", f"echo x > {tmp_path}/cache/other.txt",
                 f"cp /tmp/x {tmp_path}/cache/", f"rm -rf {tmp_path}/cache/other", f"rsync -a /tmp/x/ {tmp_path}/state/",
                 f"mv /tmp/x {tmp_path}/state", f"mv /tmp/x {tmp_path}/"):
        assert ask(ledger, line)[0] == "none", line
    # `handoff run` of a path there is not a run of this ledger (only the ledger and its sidecars are)
    assert ask(ledger, f"handoff run {facts} db-18 cutover") == ("none", "")
    assert "the guard refuses cutover on db-18" in ask(ledger, f"handoff run {ledger} db-18 cutover")[1]
    data = {"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": str(ledger.parent),
            "tool_input": {"file_path": str(facts), "content": "{}"}}
    out = io.StringIO()
    assert run("pre-tool-use", str(ledger), io.StringIO(json.dumps(data)), out) == 0
    answer = json.loads(out.getvalue())["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "the engine's own files" in answer["permissionDecisionReason"]
