"""The demo fleet's simulator, run as real processes, and the shipped example ledgers.

Every test gets its own world folder through HANDOFF_SIM_WORLD and runs the simulator
50 times faster than real time, so the whole file takes a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LEDGERS = ROOT / "ledgers"
DEMO = LEDGERS / "demo"
SIM = DEMO / "sim.py"


def env_for(world: Path, speed: str) -> dict[str, str]:
    return {**os.environ, "HANDOFF_SIM_WORLD": str(world), "HANDOFF_SIM_SPEED": speed}


def sim(world: Path, *args: str, speed: str = "50") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SIM), *args],
        env=env_for(world, speed),
        cwd=world.parent,
        capture_output=True,
        text=True,
        timeout=30,
    )


def counts(world: Path) -> dict:
    result = sim(world, "counts")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def world(tmp_path: Path) -> Path:
    return tmp_path / "world"


# -- the seeded world matches the demo ledger --------------------------------------


def test_seed_matches_the_article(world: Path) -> None:
    assert sim(world, "lsn", "db-18").stdout.strip() == "0/9A3F2C10"
    lag = float(sim(world, "lag", "db-18").stdout)
    assert 1.0 < lag < 2.2  # the note: "lag was 2.1s at 02:07Z"
    assert sim(world, "version", "db-17").stdout.strip() == "16"
    assert sim(world, "version", "db-19").stdout.strip() == "14"
    assert sim(world, "metric", "error_rate_5m").stdout.strip() == "0.02%"

    failed = sim(world, "check", "db-27")
    assert failed.returncode == 1
    assert '"aclitem" data type in user tables' in failed.stderr
    ok = sim(world, "check", "db-19")
    assert ok.returncode == 0
    assert ok.stdout.strip() == "pg_upgrade --check: Clusters are compatible"
    assert (world / "db-18.json").is_file() and (world / "config.json").is_file()


def test_lsn_of_an_unlinked_db_is_an_error(world: Path) -> None:
    result = sim(world, "lsn", "db-19")
    assert result.returncode == 1
    assert "not linked" in result.stderr and result.stdout == ""


# -- link ---------------------------------------------------------------------------


def test_link_counts_every_run_and_refuses_a_second_link(world: Path) -> None:
    first = sim(world, "link", "db-19")
    assert first.returncode == 0, first.stderr
    lsn = sim(world, "lsn", "db-19").stdout.strip()
    assert lsn.startswith("0/") and lsn in first.stdout and lsn != "0/9A3F2C10"

    second = sim(world, "link", "db-19")
    assert second.returncode == 1
    assert "already linked; --link is irreversible" in second.stderr
    assert sim(world, "lsn", "db-19").stdout.strip() == lsn
    assert counts(world)["db-19"]["link_runs"] == 2


def test_link_on_the_seeded_replicating_db_is_refused(world: Path) -> None:
    result = sim(world, "link", "db-18")
    assert result.returncode == 1
    assert "irreversible" in result.stderr
    assert counts(world)["db-18"]["link_runs"] == 1


def test_concurrent_links_count_every_run_and_only_one_succeeds(world: Path) -> None:
    sim(world, "version", "db-21")  # create the world first, so all racers start equal
    procs = [
        subprocess.Popen(
            [sys.executable, str(SIM), "link", "db-21"],
            env=env_for(world, "10"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    codes = [p.wait(timeout=30) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(codes) == [0, 1, 1, 1, 1, 1]
    assert counts(world)["db-21"]["link_runs"] == 6
    assert json.loads((world / "db-21.json").read_text())["linked"] is True


def test_a_link_killed_midway_is_counted_and_did_not_happen(world: Path) -> None:
    sim(world, "version", "db-22")
    proc = subprocess.Popen(
        [sys.executable, str(SIM), "link", "db-22"],
        env=env_for(world, "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while counts(world).get("db-22", {}).get("link_runs") != 1:
        assert time.monotonic() < deadline, "link never recorded its run"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # mid-sleep: counted, not yet linked
    proc.wait(timeout=10)
    assert sim(world, "lsn", "db-22").returncode == 1
    assert counts(world)["db-22"]["link_runs"] == 1
    json.loads((world / "db-22.json").read_text())  # never torn


# -- lag and cutover ------------------------------------------------------------------


def test_lag_falls_below_5_seconds(world: Path) -> None:
    assert sim(world, "link", "db-23").returncode == 0
    # A near-frozen clock reads the lag as it was right after --link, on any machine.
    start = float(sim(world, "lag", "db-23", speed="0.001").stdout)
    assert start > 11
    readings = [start]
    deadline = time.monotonic() + 5
    while readings[-1] >= 5:
        assert time.monotonic() < deadline, f"lag never fell under 5: {readings}"
        time.sleep(0.05)
        readings.append(float(sim(world, "lag", "db-23").stdout))
    assert readings == sorted(readings, reverse=True)
    time.sleep(0.2)
    assert float(sim(world, "lag", "db-23").stdout) == pytest.approx(0.8)  # the floor


def test_cutover_requires_lag_under_5_and_happens_once(world: Path) -> None:
    unlinked = sim(world, "cutover", "db-24")
    assert unlinked.returncode == 1 and "not linked" in unlinked.stderr

    assert sim(world, "link", "db-24").returncode == 0
    # A near-frozen clock keeps the lag at ~12 s, whatever the machine's speed.
    early = sim(world, "cutover", "db-24", speed="0.001")
    assert early.returncode == 1
    assert "lag" in early.stderr and "under 5" in early.stderr
    assert sim(world, "version", "db-24").stdout.strip() == "14"

    time.sleep(0.2)  # at speed 50, well past the ~4.7 s the lag needs
    done = sim(world, "cutover", "db-24")
    assert done.returncode == 0, done.stderr
    assert sim(world, "version", "db-24").stdout.strip() == "16"
    again = sim(world, "cutover", "db-24")
    assert again.returncode == 1 and "already cut over" in again.stderr
    assert counts(world)["db-24"]["cutover_runs"] == 4


def test_speed_from_config_when_the_environment_does_not_set_it(world: Path) -> None:
    """With no HANDOFF_SIM_SPEED, config.json's speed scales every pause: a check's pause is fifty
    times shorter at 50 than at 1. The sim runs as a real process whose time.sleep records what it was asked to sleep."""
    sim(world, "metric", "error_rate_5m")  # writes config.json from the seed
    config = json.loads((world / "config.json").read_text())
    env = {k: v for k, v in os.environ.items() if k != "HANDOFF_SIM_SPEED"}
    env["HANDOFF_SIM_WORLD"] = str(world)
    recording = ("import runpy, sys, time\n"
                 "slept = []\n"
                 "time.sleep = slept.append\n"
                 f"sys.argv = [{str(SIM)!r}] + sys.argv[1:]\n"
                 "try:\n"
                 f"    runpy.run_path({str(SIM)!r}, run_name='__main__')\n"
                 "finally:\n"
                 "    print('SLEPT', sum(slept), file=sys.stderr)\n")

    def slept_for(db: str, speed: float) -> float:
        (world / "config.json").write_text(json.dumps({**config, "speed": speed}))
        result = subprocess.run([sys.executable, "-c", recording, "check", db], env=env,
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        return float(result.stderr.rsplit("SLEPT", 1)[1])

    at_one = slept_for("db-18", 1)
    assert at_one > 0 and slept_for("db-18", 50) == pytest.approx(at_one / 50)


# -- drift, failures, paging, reset -----------------------------------------------


def test_drift_changes_the_lsn(world: Path) -> None:
    result = sim(world, "drift", "db-18", "0/DEADBEEF")
    assert result.returncode == 0 and "0/9A3F2C10" in result.stdout
    assert sim(world, "lsn", "db-18").stdout.strip() == "0/DEADBEEF"


def test_injected_failure_used_up_after_its_count(world: Path) -> None:
    assert sim(world, "fail", "db-25", "check", "1", "could not connect to source postmaster").returncode == 0
    first = sim(world, "check", "db-25")
    assert first.returncode == 1 and "could not connect to source postmaster" in first.stderr
    assert sim(world, "check", "db-25").returncode == 0
    assert counts(world)["db-25"]["check_runs"] == 2


def test_page_appends_one_line_per_message(world: Path) -> None:
    assert sim(world, "page", "db-18: cutover needs approval\nPaging platform-oncall").returncode == 0
    assert sim(world, "page", "second").returncode == 0
    lines = (world / "pages.log").read_text().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("db-18: cutover needs approval | Paging platform-oncall")
    assert lines[1].endswith(" second")


def test_metric_can_be_raised_for_the_pause_invariant(world: Path) -> None:
    assert sim(world, "set-metric", "error_rate_5m", "0.8%").returncode == 0
    assert sim(world, "metric", "error_rate_5m").stdout.strip() == "0.8%"
    unknown = sim(world, "metric", "nope")
    assert unknown.returncode == 1 and "error_rate_5m" in unknown.stderr


def test_reset_removes_only_the_simulators_files(world: Path) -> None:
    sim(world, "link", "db-19")
    assert sim(world, "reset").returncode == 0
    assert not world.exists()
    sim(world, "version", "db-19")
    (world / "keep.txt").write_text("not ours")
    result = sim(world, "reset")
    assert result.returncode == 1 and "keep.txt" in result.stderr
    assert sorted(p.name for p in world.iterdir()) == ["keep.txt"]


def test_usage_errors_exit_2(world: Path) -> None:
    assert sim(world).returncode == 2
    assert sim(world, "explode", "db-1").returncode == 2
    assert sim(world, "link").returncode == 2
    assert sim(world, "link", "db-1", "db-2").returncode == 2
    bad_speed = sim(world, "lag", "db-18", speed="fast")
    assert bad_speed.returncode == 2 and "speed" in bad_speed.stderr


# -- hostile names ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["; rm -rf /", "../etc", "..", "a/b", "/etc/passwd"])
def test_names_that_could_leave_the_world_are_refused(tmp_path: Path, world: Path, name: str) -> None:
    result = sim(world, "link", name)
    assert result.returncode == 2
    assert "refusing database name" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["world"]


def test_odd_names_map_to_distinct_files_inside_the_world(tmp_path: Path, world: Path) -> None:
    names = ["$(touch pwned)", "`touch pwned`", "-rf", "--help", "config", ".hidden", "db 18", "db-18\n"]
    for name in names:
        result = sim(world, "check", name)
        assert result.returncode == 0, (name, result.stderr)
        assert "Clusters are compatible" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["world"]  # nothing ran `touch`
    seen = counts(world)
    assert set(names) <= set(seen)
    assert all(seen[n]["check_runs"] == 1 for n in names)
    files = [p for p in world.iterdir() if p.suffix == ".json" and p.name != "config.json"]
    assert all(p.parent == world and not p.name.startswith("-") for p in files)
    assert "speed" in json.loads((world / "config.json").read_text())  # db "config" is elsewhere


# -- the demo runbook end to end, without the engine ----------------------------------


def test_demo_runbook_commands_walk_one_db_from_queued_to_done(world: Path) -> None:
    ledger = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    steps = {s["name"]: s for s in ledger["runbook"]["steps"]}
    values = {"{python}": sys.executable, "{ledger_dir}": str(DEMO), "{target}": "db-19"}

    def run(argv: list[str]) -> subprocess.CompletedProcess:
        rendered = []
        for arg in argv:
            for key, value in values.items():
                arg = arg.replace(key, value)
            rendered.append(arg)
        return subprocess.run(rendered, env=env_for(world, "50"), capture_output=True, text=True, timeout=30)

    assert run(steps["check"]["run"]).returncode == 0
    assert run(steps["link"]["run"]).returncode == 0
    lsn = run(steps["link"]["verify"]).stdout.strip()
    assert lsn.startswith("0/")
    deadline = time.monotonic() + 5
    while not float(run(steps["replicate"]["run"]).stdout) < 5:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run(steps["replicate"]["verify"]).stdout.strip() == lsn
    assert run(steps["cutover"]["run"]).returncode == 0
    assert run(steps["cutover"]["verify"]).stdout.strip() == "16"
    assert run(ledger["metrics"]["error_rate_5m"]["run"]).stdout.strip() == "0.02%"
    assert run([*ledger["notify"][0]["run"], "db-19 done"]).returncode == 0
    assert counts(world)["db-19"] == {"check_runs": 1, "cutover_runs": 1, "link_runs": 1}


# -- the example ledgers ------------------------------------------------------------


ARTICLE_LINES = [
    "# ledger.yaml (the agent's only source of truth)",
    "task: pg14-to-pg16-fleet-upgrade",
    "owner_shift: platform-oncall",
    "started: 2026-09-09T14:00Z",
    "  - never run cutover on a db whose state != verified",
    "  - never touch more than 2 dbs concurrently",
    "  - pause if error_rate_5m > 0.5%",
    '  db-17: {state: done, verified_at: "2026-09-10T01:52Z"}',
    '  db-18: {state: replicating, checkpoint: "0/9A3F2C10",',
    '    last_action: "pg_upgrade --link ok, logical replication started",',
    '    next_action: "verify lag < 5s then cutover"}',
    "  db-19: {state: queued}",
    '  db-20: {state: blocked, reason: "pending app-team ack (ticket PLAT-4412)"}',
    "handoff_note: >",
    "  Started db-18 at 01:58Z. Replication lag was 2.1s at 02:07Z.",
    "  Do NOT retry pg_upgrade on db-18, the --link step is irreversible.",
    "  Nothing else is in flight.",
]


@pytest.mark.parametrize("path", [LEDGERS / "pg16-fleet.yaml", DEMO / "ledger.yaml"])
def test_fleet_ledgers_carry_the_article_and_its_counts(path: Path) -> None:
    text = path.read_text()
    assert text.startswith(ARTICLE_LINES[0] + "\n")
    lines = text.splitlines()
    for line in ARTICLE_LINES:
        assert line in lines, line
    ledger = yaml.safe_load(text)
    assert ledger["started"] == "2026-09-09T14:00Z"
    assert ledger["targets"]["db-18"]["checkpoint"] == "0/9A3F2C10"
    assert list(ledger["targets"]) == [f"db-{i:02d}" for i in range(1, 41)]
    states = Counter(t["state"] for t in ledger["targets"].values())
    assert states == {"done": 17, "replicating": 1, "queued": 20, "blocked": 1, "failed": 1}
    failed = [t for t in ledger["targets"].values() if t["state"] == "failed"]
    assert failed[0]["reason"]
    assert ledger["handoff_note"].startswith("Started db-18 at 01:58Z.")
    steps = [s["name"] for s in ledger["runbook"]["steps"]]
    assert steps == ["check", "link", "replicate", "cutover"]
    by_name = {s["name"]: s for s in ledger["runbook"]["steps"]}
    assert [by_name[n]["reversible"] for n in steps] == [True, False, True, False]
    assert by_name["replicate"]["until"] == "value < 5"
    assert "error_rate_5m" in ledger["metrics"]


@pytest.mark.parametrize(
    ("name", "total"), [("pg16-fleet.yaml", 40), ("k8s-rollout.yaml", 25), ("tls-rotation.yaml", 300)]
)
def test_example_ledgers_are_well_formed(name: str, total: int) -> None:
    ledger = yaml.safe_load((LEDGERS / name).read_text())
    assert len(ledger["targets"]) == total
    assert ledger["handoff_note"].strip()
    steps = ledger["runbook"]["steps"]
    known = {"queued", "done"} | {s["to"] for s in steps}
    for step in steps:
        assert step["from"] in known, step["name"]
        for key in ("run", "check", "verify"):
            if key in step:
                assert all(isinstance(a, str) for a in step[key]), (step["name"], key)
    for metric in ledger["metrics"].values():
        assert all(isinstance(a, str) for a in metric["run"])
    assert any(not s["reversible"] for s in steps) and any(s["reversible"] for s in steps)
    for target in ledger["targets"].values():
        if "checkpoint" in target:
            assert isinstance(target["checkpoint"], str)


@pytest.mark.parametrize("path", sorted(LEDGERS.glob("*.yaml")) + [DEMO / "ledger.yaml"], ids=lambda p: p.name)
def test_example_ledgers_validate_against_the_model(path: Path) -> None:
    from engine.ledger.model import Ledger

    ledger = Ledger.model_validate(yaml.safe_load(path.read_text()))
    assert ledger.steps()


def test_demo_runbook_only_uses_simulator_commands_that_exist() -> None:
    # Ask the script itself (importing it would leave a __pycache__ in the demo folder).
    usage = subprocess.run([sys.executable, str(SIM), "help"], capture_output=True, text=True, timeout=30)
    commands = {line.split()[0] for line in usage.stdout.splitlines()[1:]}
    assert {"check", "link", "lsn", "lag", "cutover", "version", "metric", "page"} <= commands
    ledger = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    argvs = [s[k] for s in ledger["runbook"]["steps"] for k in ("run", "check", "verify") if k in s]
    argvs += [m["run"] for m in ledger["metrics"].values()] + [n["run"] for n in ledger["notify"]]
    for argv in argvs:
        assert argv[:2] == ["{python}", "{ledger_dir}/sim.py"], argv
        assert argv[2] in commands, argv
    assert ledger["budget"] == {"steps": 12}
