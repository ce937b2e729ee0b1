"""A whole ops folder restored from a backup (ledger, journal and sidecars all from an
old tar) is a consistent past in which the approval is unused. The per-user
high-water mark outside the folder sees it: refused like a rollback, and a spent
approval never runs the step again, even after `--accept-rollback`."""

from __future__ import annotations

import shutil
import sys
import tarfile
from pathlib import Path

import yaml

from tests.conftest import cli_env, handoff

# No verify: this is the witnesses' job alone (a probe would also catch it).
LINK = "import sys; open(sys.argv[1], 'a').write('x')"


def _setup(tmp_path: Path) -> tuple[Path, Path, dict]:
    runs = tmp_path / "runs.txt"
    ops = tmp_path / "ops"
    ops.mkdir()
    data = {"task": "restore", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, "-c", LINK, str(runs)]}]}}
    (ops / "ledger.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return ops / "ledger.yaml", runs, cli_env(XDG_STATE_HOME=str(tmp_path / "state"))


def _backup(ops: Path, tar: Path) -> None:
    with tarfile.open(tar, "w") as out:
        out.add(ops, arcname="ops")


def _restore(ops: Path, tar: Path) -> None:
    shutil.rmtree(ops)
    with tarfile.open(tar) as src:
        # `tar` restores modes and times as `tar -x` does; the filter argument came in 3.11.4
        # (before it, extractall always did that).
        src.extractall(ops.parent, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))


def _runs(runs: Path) -> int:
    return len(runs.read_text()) if runs.exists() else 0


def test_a_restored_folder_is_refused_and_the_spent_approval_never_runs_again(tmp_path):
    ledger, runs, env = _setup(tmp_path)
    assert handoff("approve", ledger, "a", "--as", "human-1", env=env).returncode == 0
    tar = tmp_path / "ops-backup.tar"
    _backup(ledger.parent, tar)
    first = handoff("resume", "--ledger", ledger, env=env)
    assert first.returncode == 0 and _runs(runs) == 1, first.stdout + first.stderr

    _restore(ledger.parent, tar)
    restored = ledger.read_bytes()
    assert yaml.safe_load(restored)["targets"]["a"]["state"] == "checked"  # the past, approval unused
    for args in (("resume", "--ledger", ledger), ("run", ledger, "a")):
        again = handoff(*args, env=env)
        assert again.returncode != 0, again.stdout + again.stderr
        said = again.stdout + again.stderr
        assert "went back in time" in said and "restored from a backup" in said and "--accept-rollback" in said, said
        assert "Traceback" not in said
        assert _runs(runs) == 1 and ledger.read_bytes() == restored
    check = handoff("check", ledger, env=env)
    assert check.returncode != 0 and "lower than the highest this user's engine wrote" in check.stdout + check.stderr

    accepted = handoff("check", ledger, "--accept-rollback", "--as", "human-2", env=env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    after = handoff("resume", "--ledger", ledger, env=env)
    said = after.stdout + after.stderr
    assert _runs(runs) == 1, said
    assert "already used" in said and "Traceback" not in said, said
    target = yaml.safe_load(ledger.read_text())["targets"]["a"]
    assert target["state"] != "linked" and "in_flight" not in target, target


def _spent_after_a_backup(tmp_path: Path) -> tuple[Path, Path, dict, Path]:
    """(ledger, runs, env, tar): approved, backed up, then the step run once (the approval spent)."""
    ledger, runs, env = _setup(tmp_path)
    assert handoff("approve", ledger, "a", "--as", "human-1", env=env).returncode == 0
    tar = tmp_path / "ops-backup.tar"
    _backup(ledger.parent, tar)
    first = handoff("resume", "--ledger", ledger, env=env)
    assert first.returncode == 0 and _runs(runs) == 1, first.stdout + first.stderr
    return ledger, runs, env, tar


def test_a_backup_restored_in_another_folder_never_runs_the_spent_approval_again(tmp_path):
    """The same backup untarred somewhere else: another path, so another high-water identity with no mark of its
    own. Its approval was given for the command run in the first folder: an approval binds the folder its step
    runs in, so here it approves nothing and the step waits for a new approval (the spent list kept for every
    ledger is the next fence: test_a_restored_folder_given_an_id_by_hand_...)."""
    ledger, runs, env, tar = _spent_after_a_backup(tmp_path)
    elsewhere = tmp_path / "restored" / "ops"
    elsewhere.mkdir(parents=True)
    _restore(elsewhere, tar)
    copy = elsewhere / "ledger.yaml"
    assert yaml.safe_load(copy.read_text())["targets"]["a"]["state"] == "checked"
    again = handoff("resume", "--ledger", copy, env=env)
    assert _runs(runs) == 1, again.stdout + again.stderr
    assert "a: link requires approval" in again.stdout, again.stdout + again.stderr
    assert yaml.safe_load(copy.read_text())["targets"]["a"]["state"] == "awaiting_approval"


def test_a_restored_folder_given_an_id_by_hand_never_runs_the_spent_approval_again(tmp_path):
    """Restored in place, then `id:` added by hand: the ledger's identity is its id now, with no mark of its own;
    the spent approval is still refused."""
    ledger, runs, env, tar = _spent_after_a_backup(tmp_path)
    _restore(ledger.parent, tar)
    ledger.write_text("id: fleet-restore\n" + ledger.read_text())
    again = handoff("resume", "--ledger", ledger, env=env)
    assert _runs(runs) == 1, again.stdout + again.stderr
    assert "was already used" in again.stdout + again.stderr, again.stdout + again.stderr


def test_a_dry_run_spends_nothing_for_the_real_run(tmp_path):
    """A rehearsal before the real run spends nothing of the list kept for every ledger: the real run runs once."""
    ledger, runs, env = _setup(tmp_path)
    assert handoff("approve", ledger, "a", "--as", "human-1", env=env).returncode == 0
    rehearsal = handoff("resume", "--ledger", ledger, "--dry-run", env=env)
    assert rehearsal.returncode == 0 and _runs(runs) == 0, rehearsal.stdout + rehearsal.stderr
    # The rehearsal calls the approval what it is: given by human-1, for the real run (never "written in by hand").
    assert "a: dry run: link would run" in rehearsal.stdout and "guard: allowed (approved by human-1" in rehearsal.stdout
    assert "not recorded" not in rehearsal.stdout + rehearsal.stderr, rehearsal.stdout
    assert "ready for link (approved, runs next session)" in rehearsal.stdout, rehearsal.stdout
    assert "the dry run can go no further: what is left is for the real run" in rehearsal.stdout, rehearsal.stdout
    real = handoff("resume", "--ledger", ledger, env=env)
    assert real.returncode == 0 and _runs(runs) == 1, real.stdout + real.stderr
