"""Signed approvals are bound to one ledger: "What is signed names the ledger's `id` ... so a
signature for one ledger never approves another" (engine/approvals/signing.py), and docs/ledger.md:
"The first signed approval writes it too (a signature names the ledger it approves)".

A ledger with no `id` yet (every hand-written or `handoff init` ledger until its first Temporal or
LangGraph start or signed approval) adopts whatever id the first signature presented to it names
(engine/approvals/approvers.py admit_signed, `new_id`). So alice's signature over ledger A's
approval, replayed by anyone who can read A (the payload and the armored signature are in A's
file) and run the engine's code, approves the same target on a second ledger B in the same folder:
B takes A's id from the replayed payload, the signature checks out when given and at the fence,
and B's irreversible step runs although alice never approved anything on B."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, handoff

MARK = "import sys, pathlib; pathlib.Path(sys.argv[2]).write_text('ran')\n"
REPLAY = """
import sys
import engine.approvals.signing as signing
from engine.approvals.approvers import Signed
signed = Signed(sys.argv[2], sys.argv[3])
signing.sign_approval = lambda *a, **k: signed   # no key: alice's signature copied out of ledger A
from engine.api import open_ledger
open_ledger(sys.argv[1], actor='alice').approve('db-19')
"""


def test_a_signature_for_one_ledger_approves_a_second_ledger_without_an_id(tmp_path: Path) -> None:
    """alice signs db-19's link on ledger A; her payload and signature, replayed on ledger B (same
    folder, no id yet), are admitted (B adopts A's id from the payload) and B's irreversible step runs."""
    key = tmp_path / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@laptop", "-f", str(key)], check=True)
    pub = (tmp_path / "alice.pub").read_text().strip()
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "signed", "owner_shift": "test-oncall", "approvers": [{"name": "alice", "ssh_key": pub}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}", "{ledger_dir}/spawned"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump(data, sort_keys=False))
    b.write_text(a.read_text())  # a second ledger of the same shape (another job), no id either

    given = handoff("approve", a, "db-19", "--yes", "--as", "alice", "--key", str(key))
    assert given.returncode == 0, given.stdout + given.stderr
    approval = yaml.safe_load(a.read_text())["targets"]["db-19"]["approvals"][0]

    # Someone without alice's key (an agent that cleared its environment; any user who can read A)
    # runs the engine's own approve on B with alice's signature copied out of A.
    replay = subprocess.run([sys.executable, "-c", REPLAY, str(b), approval["signed"], approval["sig"]],
                            capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=60)
    ran = handoff("run", b, "db-19", "link")
    said = replay.stdout + replay.stderr + ran.stdout + ran.stderr
    assert not (tmp_path / "spawned").exists(), (
        f"alice's signature for ledger A (id {yaml.safe_load(a.read_text()).get('id')}) approved and ran link on "
        f"ledger B, which took that id from the replayed payload (B's id now {yaml.safe_load(b.read_text()).get('id')}):"
        f"\n{said}")
    assert "this ledger has no `id`" in replay.stderr and "id" not in yaml.safe_load(b.read_text()), said


def test_the_first_signed_approval_gives_the_ledger_its_id_in_a_write_of_its_own(tmp_path: Path) -> None:
    """The id a ledger gets is written (journaled as `ledger_id`) before the approval that signs over it."""
    key = tmp_path / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@laptop", "-f", str(key)], check=True)
    data = {"task": "signed", "approvers": [{"name": "alice", "ssh_key": (tmp_path / "alice.pub").read_text().strip()}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done", "run": ["true"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    a = tmp_path / "a.yaml"
    a.write_text(yaml.safe_dump(data, sort_keys=False))
    given = handoff("approve", a, "db-19", "--yes", "--as", "alice", "--key", str(key))
    assert given.returncode == 0, given.stdout + given.stderr
    written = yaml.safe_load(a.read_text())
    records = [json.loads(line) for line in (tmp_path / "a.yaml.journal.jsonl").read_text().splitlines()]
    [named] = [r for r in records if r["kind"] == "ledger_id"]
    [approval] = [r for r in records if r["kind"] == "approval"]
    assert written["id"] in named["msg"] and named["rev"] < approval["rev"], records
    assert json.loads(written["targets"]["db-19"]["approvals"][0]["signed"])["ledger"] == written["id"]
