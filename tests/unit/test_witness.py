"""The journal's witness of a spent approval cannot be blinded, outrun or switched off.

Each test replays the attack of issue 19 on real processes: db-50 approved, the file
copied, a session runs the irreversible `link` (the simulator counts real spawns in its
world file), the old copy is put back, and a person accepts the rollback. The next
session must find the approval's use and never run `link` a second time.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from session_kit import counts, demo_copy, handoff, journal, load, resume

from engine.audit.journal import Journal

HEX16 = "[0-9a-f]{16}"


def _linked_once(tmp_path: Path, **top):
    """db-50 approved, a copy of the file taken, then a session runs link once."""
    tmp_path.mkdir(exist_ok=True)
    ledger = demo_copy(tmp_path, {"db-50": {"state": "checked"}}, budget={"steps": 1}, **top)
    world = tmp_path / "world"
    assert resume(ledger, world=world).returncode == 0
    assert handoff("approve", str(ledger), "db-50", "--as", "human-1", world=world).returncode == 0
    approved = ledger.read_bytes()
    ran = resume(ledger, world=world)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert counts(world)["db-50"]["link_runs"] == 1
    return ledger, world, approved


def _rollback_and_resume(ledger: Path, world: Path, approved: bytes):
    """Put the approved copy back, accept the rollback as a person, run a session."""
    ledger.write_bytes(approved)
    accepted = handoff("check", str(ledger), "--accept-rollback", "--as", "human-2", world=world)
    assert any(r["kind"] == "rollback_accepted" for r in journal(ledger)), accepted.stdout + accepted.stderr
    return accepted, resume(ledger, world=world)


def test_a_redact_pattern_matching_hex_never_blinds_the_witness(tmp_path: Path) -> None:
    """`redact: [hex16]`: the step_start keeps the real approval hash; a stale copy accepted still runs link once."""
    ledger, world, approved = _linked_once(tmp_path, redact=[HEX16])
    spent = load(ledger)["targets"]["db-50"]["approvals"][0]["hash"]
    accepted, third = _rollback_and_resume(ledger, world, approved)
    assert counts(world)["db-50"]["link_runs"] == 1, third.stdout + third.stderr
    assert "already started under the approval by human-1" in third.stdout
    start = next(r for r in journal(ledger) if r["kind"] == "step_start" and r.get("target") == "db-50" and r.get("approval_hash"))
    assert start["approval_hash"] == spent


def test_check_refuses_a_redact_pattern_that_would_match_a_witness(tmp_path: Path) -> None:
    """`handoff check` names the pattern's file:line and says what to do; the ledger is unchanged."""
    ledger = demo_copy(tmp_path, {"db-50": {"state": "checked"}}, redact=["s3cr3t-[a-z]+", HEX16])
    before = ledger.read_bytes()
    check = handoff("check", str(ledger), world=tmp_path / "world")
    assert check.returncode == 1, check.stdout
    line = next(n for n, text in enumerate(before.decode().splitlines(), 1) if HEX16 in text)
    found = [row for row in check.stdout.splitlines() if "would also mask" in row]
    assert len(found) == 1, check.stdout  # the harmless pattern is not named
    assert f"ledger.yaml:{line}:" in found[0] and "approval hash" in found[0] and "narrow" in found[0]
    assert ledger.read_bytes() == before


def test_the_witness_reaches_past_70_mib_of_later_journal(tmp_path: Path) -> None:
    """70 MiB of chatty journal after the link: the stale copy accepted still finds the approval's use."""
    ledger, world, approved = _linked_once(tmp_path)
    chatty = Journal(str(ledger) + ".journal.jsonl")
    blob = "x" * (1024 * 1024)
    for i in range(70):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-51", output=blob)
    assert os.path.getsize(chatty.path) > 70 * 1024 * 1024
    accepted, third = _rollback_and_resume(ledger, world, approved)
    assert counts(world)["db-50"]["link_runs"] == 1, third.stdout + third.stderr
    assert "already started under the approval by human-1" in third.stdout


def _damage(record: Path, how: str, approved: bytes, tmp_path: Path) -> None:
    if how == "deleted":
        record.unlink()
    elif how == "torn":
        record.write_bytes(record.read_bytes()[:7])
    elif how == "edited":  # made to agree with the old copy: its hash, its revision
        import yaml

        from engine.store.file import digest

        body = json.loads(record.read_text())
        body.update(hash=digest(approved), revision=yaml.safe_load(approved)["revision"])
        record.write_text(json.dumps(body))
    elif how == "symlinked":
        decoy = tmp_path / "decoy.json"
        decoy.write_text("{}")
        record.unlink()
        record.symlink_to(decoy)


def test_rollback_is_seen_whatever_happened_to_the_last_write_record(tmp_path: Path) -> None:
    """Deleted, torn, edited or symlinked `.last-write.json`: the journal's highest revision still calls the old copy a rollback."""
    linked, world_linked, approved = _linked_once(tmp_path / "first")
    for how in ("deleted", "torn", "edited", "symlinked"):
        shutil.copytree(tmp_path / "first", tmp_path / how, symlinks=True)
        ledger, world = tmp_path / how / linked.relative_to(tmp_path / "first"), tmp_path / how / "world"
        ledger.write_bytes(approved)
        _damage(Path(str(ledger) + ".last-write.json"), how, approved, tmp_path / how)
        check = handoff("check", str(ledger), world=world)
        assert check.returncode == 1 and "went back in time" in check.stdout, (how, check.stdout)
        assert "journal" in check.stdout, (how, check.stdout)
        again = resume(ledger, world=world)
        assert again.returncode == 2 and "went back in time" in again.stderr, (how, again.stdout + again.stderr)
        assert ledger.read_bytes() == approved
        assert counts(world)["db-50"]["link_runs"] == 1
