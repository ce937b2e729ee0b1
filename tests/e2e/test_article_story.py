"""The article's `agent resume` story, end to end on a copy of the demo fleet.

Real `handoff` processes, the real simulator: db-18 replicating at 0/9A3F2C10 with a
note saying not to retry the link; the session verifies the checkpoint, never re-runs
link on db-18, puts cutover behind an approval with a page, checks db-19, writes the
note and exits 0. After `handoff approve` the next session runs cutover once; the one
after that does nothing for db-18.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import counts, demo_copy, handoff, journal, load, resume  # noqa: E402


def test_the_article_story(tmp_path: Path) -> None:
    """Three sessions and one human approval reproduce the article, line for line in spirit."""
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"

    first = resume(ledger, world=world)
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    lines = out.splitlines()
    order = [
        "loaded ledger: 17 done, 1 replicating, 20 queued, 1 blocked, 1 failed",
        "handoff_note read. Rule: Do NOT retry pg_upgrade on db-18",
        "db-18: verifying checkpoint 0/9A3F2C10 ... match",
        "invariant check: touched 1/2 ok, error_rate_5m 0.02% ok",
        "db-18: cutover requires approval (irreversible). Paging platform-oncall.",
        "ledger updated: db-18.state = awaiting_approval",
        'handoff_note: "Session',
    ]
    at = [next((i for i, line in enumerate(lines) if want in line), None) for want in order]
    assert None not in at, f"missing one of {order} in:\n{out}"
    assert at == sorted(at), out
    assert "db-19: check passed. ledger updated: db-19.state = checked" in out
    assert "session budget" in out and "exiting cleanly" in out
    assert all(line.startswith("[") and line[9] == "]" for line in lines if not line.startswith(" "))

    data = load(ledger)
    db18 = data["targets"]["db-18"]
    assert db18["state"] == "awaiting_approval" and db18["awaiting"] == "cutover"
    assert db18["awaiting_by"].startswith("agent:") and db18["checkpoint"] == "0/9A3F2C10"
    assert data.get("session") is None
    note = data["handoff_note"]
    assert "db-18 waiting on human approval for cutover" in note
    assert "Do NOT retry link on db-18: irreversible" in note
    assert "Nothing in flight." in note
    world_counts = counts(world)
    assert world_counts["db-18"]["link_runs"] == 0 and world_counts["db-18"]["cutover_runs"] == 0
    assert world_counts["db-19"]["check_runs"] == 1
    pages = (world / "pages.log").read_text()
    assert "db-18: cutover requires approval" in pages

    # Every printed line is in the journal, so the TUI's log pane shows the same story.
    messages = {r["msg"] for r in journal(ledger)}
    assert "db-18: verifying checkpoint 0/9A3F2C10 ... match" in messages

    approved = handoff("approve", str(ledger), "db-18", "--as", "oncall-alice", "--comment", "lag fine", world=world)
    assert approved.returncode == 0, approved.stderr

    second = resume(ledger, world=world)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "db-18: starting cutover (irreversible, approved by oncall-alice" in second.stdout
    assert "ledger updated: db-18.state = done" in second.stdout
    db18 = load(ledger)["targets"]["db-18"]
    assert db18["state"] == "done"
    (approval,) = db18["approvals"]
    assert approval["used_by"].startswith("agent:") and approval["used_at"]
    assert counts(world)["db-18"] == {"check_runs": 0, "cutover_runs": 1, "link_runs": 0}

    third = resume(ledger, world=world)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "db-18:" not in third.stdout.replace("db-18 ", "")  # nothing said or done about db-18
    assert counts(world)["db-18"] == {"check_runs": 0, "cutover_runs": 1, "link_runs": 0}


def test_dry_run_touches_nothing(tmp_path: Path) -> None:
    """`--dry-run` prints each command with the guard's decision and writes only the shadow ledger."""
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"
    before = ledger.read_bytes()
    result = resume(ledger, "--dry-run", "--max-steps", "3", world=world)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ledger.read_bytes() == before
    assert not Path(str(ledger) + ".journal.jsonl").exists()
    shadow = ledger.with_name("ledger.dryrun.yaml")
    assert load(shadow)["targets"]["db-18"]["state"] == "awaiting_approval"
    assert "db-18: dry run: cutover would run" in result.stdout and "guard: refused" in result.stdout
    assert "db-19: dry run: check would run" in result.stdout and "guard: allowed" in result.stdout
    assert not (world / "pages.log").exists()
    world_counts = counts(world)
    assert all(c["link_runs"] == 0 and c["cutover_runs"] == 0 for c in world_counts.values())
