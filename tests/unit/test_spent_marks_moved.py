"""A spent approval never authorises again, even when the agent moves the ledger behind a link.

The agent (daemon) cannot take root's `<ledger>.spent-0/` out of the ledger's folder, but it may
move every *file* in that 0777 folder and the sticky `<ledger>.attest/` folder (which takes the
ledger folder's permissions), then leave `ledger.yaml` as a symlink to the moved file. The marks
are looked for in every folder the ledger's path passes through, not only beside the real file
(a review found root's mark missed there, and the next engineer's run spent the approval again).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import cli_env, handoff
from tests.unit.test_spent_copies import _agent_writes, _as_agent, _drop_from_index, _ledger, _runs, folder  # noqa: F401
from tests.unit.test_verified_approvers import _approve_as_nobody


def test_a_spent_approval_stays_spent_when_the_agent_moves_the_ledger_behind_a_symlink(folder: Path) -> None:  # noqa: F811
    ledger = _ledger(folder)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0
    first = handoff("run", ledger, "db-19", "link")
    assert first.returncode == 0 and _runs(folder) == 1, first.stdout + first.stderr
    assert list(folder.glob("ledger.yaml.spent-0/spent-*"))  # root's mark, which the agent cannot take away

    def agent() -> None:
        moved = folder / "moved"
        moved.mkdir()
        for entry in list(folder.iterdir()):
            if entry.name.startswith("ledger.yaml") and not entry.name.startswith("ledger.yaml.spent-"):
                entry.rename(moved / entry.name)  # files of root's, and the 01777 proof folder: allowed
        (folder / "ledger.yaml").symlink_to("moved/ledger.yaml")
        real = moved / "ledger.yaml"

        def clear(led) -> None:
            t = led.targets["db-19"]
            t.approvals[0].used_at = t.approvals[0].used_by = None
            t.state, t.evidence, t.touched_at, t.reason, t.last_action = "checked", None, None, None, None
        _agent_writes(real, clear)
        _drop_from_index(real, {"step_start"})
    _as_agent(folder, agent)
    assert (folder / "ledger.yaml.spent-0").is_dir()  # the mark is still in the ledger's folder, as promised

    # The next engineer runs the very same command, on the very same path.
    again = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
    said = again.stdout + again.stderr
    assert _runs(folder) == 1, "the irreversible step ran twice on one approval:\n" + said
