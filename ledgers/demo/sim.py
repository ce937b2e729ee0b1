#!/usr/bin/env python3
"""A fake Postgres 14 -> 16 fleet for the demo ledger beside this file.

The demo runbook calls this script instead of pg_upgrade and psql, so a whole
40-database upgrade (checks, the irreversible --link, replication lag that falls
over time, cutover, failures, drift) happens for real on one laptop in seconds.

The world lives in a folder: `world/` beside this script, or `$HANDOFF_SIM_WORLD`.
  world/<db>.json     one database: version, linked, lsn, replication start, lag
                      model, and the counters link_runs / cutover_runs / check_runs
  world/config.json   speed factor, injected failures, metric values
  world/pages.log     one line per page the engine sent
  world/.lock         every update happens under flock on this file
A database not yet in world/ is created on first use from `world.seed.json`
beside this script (or as a plain, unlinked 14 if the seed does not name it).
`$HANDOFF_SIM_SPEED` overrides the speed: 50 makes every sleep and the lag
decay 50 times faster, which is what tests use.

Usage: sim.py COMMAND [ARGS]; run `sim.py help` for the list.
Exit codes: 0 done; 1 the operation failed or was refused (reason on stderr);
2 usage error, unsafe name or unreadable world.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEED_PATH = os.path.join(HERE, "world.seed.json")
CHECK_SECONDS, LINK_SECONDS, CUTOVER_SECONDS = 1.5, 2.0, 1.0
CUTOVER_MAX_LAG = 5.0
# From ~12 s to under 5 s in about 4.7 s of (speed-scaled) time after --link.
DEFAULT_LAG = {"start": 12.0, "floor": 0.8, "rate": 1.5}
DEFAULT_CONFIG = '{"speed": 1.0, "fail": {}, "metrics": {}}'  # JSON: every use gets a fresh copy
COUNTERS = ("link_runs", "cutover_runs", "check_runs")
# config.json shares the folder with the databases, so a db of that name is hashed.
RESERVED_STEMS = {"config"}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SimError(Exception):
    """A failure a person should read: printed to stderr, exit with `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# -- the world folder ------------------------------------------------------------


def world_dir() -> str:
    return os.path.abspath(os.environ.get("HANDOFF_SIM_WORLD") or os.path.join(HERE, "world"))


def db_path(world: str, name: str) -> str:
    """The file for database `name`, always directly inside `world`."""
    if not name or "/" in name or "\0" in name or ".." in name:
        raise SimError(
            f"refusing database name {name!r}: names may not be empty or contain '/', "
            f"'..' or NUL, because they must stay inside {world}",
            2,
        )
    if _PLAIN_NAME.fullmatch(name) and name.lower() not in RESERVED_STEMS:
        stem = name
    else:
        # Shell metacharacters, leading dashes or dots: keep a readable part and make
        # it unique with a hash, so two odd names never share a file.
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:40] or "db"
        stem = f"{readable}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    path = os.path.join(world, stem + ".json")
    if os.path.dirname(path) != world:
        raise SimError(f"refusing database name {name!r}: it would leave {world}", 2)
    return path


_lock_depth = 0


@contextlib.contextmanager
def locked(world: str):
    """Serialise read-modify-write of the world across processes.

    Re-entrant within a process: flock on a second descriptor of the same file
    would wait for ourselves (reading the speed while a db is locked does that)."""
    global _lock_depth
    if _lock_depth:
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
        return
    os.makedirs(world, exist_ok=True)
    fd = os.open(os.path.join(world, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _lock_depth = 1
        yield
    finally:
        _lock_depth = 0
        os.close(fd)  # closing releases the flock


def write_json(path: str, data: dict) -> None:
    """Write atomically: a kill -9 at any point leaves the old file or the new one."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself must survive a crash too
    finally:
        os.close(dir_fd)


def read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SimError(f"cannot read {path}: {exc}; `sim.py reset` starts a fresh world", 2)


def load_seed() -> dict:
    return read_json(SEED_PATH) or {}


def derived_lsn(name: str) -> str:
    """A stable, realistic-looking LSN per database, so reruns are reproducible."""
    return f"0/{int(hashlib.sha256(name.encode()).hexdigest()[:8], 16):08X}"


def fresh_db(name: str) -> dict:
    seed = load_seed()
    db = {"name": name, "version": 14, "linked": False, "cut_over": False, "lsn": None,
          "replication_started_at": None, "lag": None}
    db.update({c: 0 for c in COUNTERS})
    db.update(seed.get("defaults", {}))
    db.update(seed.get("databases", {}).get(name, {}))
    db["name"] = name
    if db["linked"]:
        db["lsn"] = db["lsn"] or derived_lsn(name)
        db["lag"] = {**DEFAULT_LAG, **(db["lag"] or {})}
        # Seeded replication "starts" when the world is first looked at, so the
        # lag story begins fresh whenever the demo does.
        db["replication_started_at"] = db["replication_started_at"] or time.time()
    return db


def get_db(world: str, name: str) -> dict:
    """Load a database; create it from the seed first. Call under `locked`."""
    path = db_path(world, name)
    db = read_json(path)
    if db is None:
        db = fresh_db(name)
        write_json(path, db)
    elif db.get("name") != name:
        raise SimError(f"{path} belongs to {db.get('name')!r}, not {name!r}; refusing", 2)
    return db


def update_db(world: str, name: str, change) -> dict:
    """Apply `change(db)` under the lock and write it durably; returns the new db."""
    with locked(world):
        db = get_db(world, name)
        change(db)
        write_json(db_path(world, name), db)
        return db


def get_config(world: str) -> dict:
    with locked(world):
        path = os.path.join(world, "config.json")
        config = read_json(path)
        if config is None:
            config = {**json.loads(DEFAULT_CONFIG), **load_seed().get("config", {})}
            write_json(path, config)
    return config


def update_config(world: str, change) -> dict:
    """Apply `change(config)` under the lock; it returns False when nothing changed."""
    get_config(world)
    with locked(world):
        path = os.path.join(world, "config.json")
        config = read_json(path) or json.loads(DEFAULT_CONFIG)
        if change(config) is not False:
            write_json(path, config)
        return config


def speed(world: str) -> float:
    raw = os.environ.get("HANDOFF_SIM_SPEED") or get_config(world).get("speed", 1.0)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise SimError(f"speed must be a positive number, got {raw!r} (HANDOFF_SIM_SPEED "
                       f"or config.json)", 2)
    return value


def pause(world: str, seconds: float) -> None:
    time.sleep(seconds / speed(world))


def current_lag(world: str, db: dict) -> float:
    model = db["lag"] or DEFAULT_LAG
    elapsed = max(0.0, time.time() - float(db["replication_started_at"] or time.time()))
    return max(model["floor"], model["start"] - model["rate"] * elapsed * speed(world))


def maybe_fail(world: str, name: str, command: str) -> None:
    """Raise the failure config.json injects for this db and command, if any.

    A failure with `times` is used up under the lock, so two processes never both
    take the last one."""
    hit: dict = {}

    def consume(config: dict) -> bool:
        spec = config.get("fail", {}).get(name)
        if not spec or spec.get("command") != command:
            return False
        hit.update(spec)
        if spec.get("times") is None:
            return False
        spec["times"] = int(spec["times"]) - 1
        if spec["times"] <= 0:
            del config["fail"][name]
        return True

    update_config(world, consume)
    if hit:
        raise SimError(hit.get("stderr") or f"{command} failed on {name} (injected)",
                       int(hit.get("exit", 1)))


def count(world: str, name: str, counter: str) -> dict:
    """Record a run before it acts, so a run killed half-way is still counted."""
    def bump(db: dict) -> None:
        db[counter] = db.get(counter, 0) + 1
    return update_db(world, name, bump)


# -- commands ----------------------------------------------------------------------


def cmd_check(world: str, name: str) -> None:
    count(world, name, "check_runs")
    pause(world, CHECK_SECONDS)
    maybe_fail(world, name, "check")
    print("pg_upgrade --check: Clusters are compatible")


def cmd_link(world: str, name: str) -> None:
    db = count(world, name, "link_runs")
    refuse_if_linked(db)
    if db["version"] >= 16:
        raise SimError(f"{name} already runs PostgreSQL {db['version']}; nothing to upgrade")
    pause(world, LINK_SECONDS)
    maybe_fail(world, name, "link")

    def link(db: dict) -> None:
        refuse_if_linked(db)  # another process may have linked it while we slept
        db.update(linked=True, lsn=derived_lsn(name), replication_started_at=time.time(),
                  lag=dict(DEFAULT_LAG))
    db = update_db(world, name, link)
    print(f"pg_upgrade --link ok on {name}, logical replication started at {db['lsn']}")


def refuse_if_linked(db: dict) -> None:
    if db["linked"]:
        raise SimError(f"{db['name']}: already linked; --link is irreversible "
                       f"(replication started at {db['lsn']}); do not run it again")


def cmd_lsn(world: str, name: str) -> None:
    with locked(world):
        db = get_db(world, name)
    if not db["linked"]:
        raise SimError(f"{name} is not linked: no replication was started, so there is "
                       f"no replication start LSN")
    print(db["lsn"])


def cmd_lag(world: str, name: str) -> None:
    with locked(world):
        db = get_db(world, name)
    if db["cut_over"]:
        raise SimError(f"{name} was cut over to {db['version']}; replication has ended")
    if not db["linked"]:
        raise SimError(f"{name} is not replicating (not linked yet), so it has no lag")
    print(f"{current_lag(world, db):.2f}")


def cmd_cutover(world: str, name: str) -> None:
    db = count(world, name, "cutover_runs")
    refuse_cutover(world, db)
    pause(world, CUTOVER_SECONDS)
    maybe_fail(world, name, "cutover")

    def cut(db: dict) -> None:
        refuse_cutover(world, db)  # a parallel cutover may have finished first
        db.update(cut_over=True, version=16)
    update_db(world, name, cut)
    print(f"cutover ok: {name} now serves traffic from PostgreSQL 16")


def refuse_cutover(world: str, db: dict) -> None:
    name = db["name"]
    if db["cut_over"]:
        raise SimError(f"{name} was already cut over to {db['version']}; refusing a second cutover")
    if not db["linked"]:
        raise SimError(f"{name} is not linked; run link and wait for replication first")
    lag = current_lag(world, db)
    if lag >= CUTOVER_MAX_LAG:
        raise SimError(f"{name}: replication lag {lag:.2f}s is not under "
                       f"{CUTOVER_MAX_LAG:g}s; cutover would lose writes")


def cmd_version(world: str, name: str) -> None:
    with locked(world):
        print(get_db(world, name)["version"])


def cmd_upgraded(world: str, name: str) -> None:
    """The cutover's probe: prints the new major version, or fails if not cut over
    (a probe that printed 14 and exited 0 would "prove" a cutover that never ran)."""
    with locked(world):
        db = get_db(world, name)
    if not db.get("cut_over") and db["version"] < 16:
        raise SimError(f"{name} is still on {db['version']}: not cut over")
    print(db["version"])


def cmd_show(world: str, name: str) -> None:
    with locked(world):
        print(json.dumps(get_db(world, name), indent=2, sort_keys=True))


def cmd_metric(world: str, metric: str) -> None:
    metrics = get_config(world).get("metrics", {})
    if metric not in metrics:
        raise SimError(f"no metric named {metric!r}; known: {', '.join(sorted(metrics)) or 'none'}")
    print(f"{metrics[metric]:g}%")


def cmd_set_metric(world: str, metric: str, value: str) -> None:
    number = parse_number(value.rstrip("%"), "metric value")

    def put(config: dict) -> None:
        config.setdefault("metrics", {})[metric] = number
    update_config(world, put)
    print(f"{metric} = {number:g}%")


def cmd_fail(world: str, name: str, command: str, times: str, *message: str) -> None:
    db_path(world, name)  # same name rules as every other command
    if command not in ("check", "link", "cutover"):
        raise SimError(f"only check, link and cutover can be made to fail, not {command!r}", 2)
    spec = {"command": command, "stderr": " ".join(message) or f"{command} failed on {name}"}
    if times != "always":
        spec["times"] = int(parse_number(times, "TIMES (a count or 'always')"))

    def put(config: dict) -> None:
        config.setdefault("fail", {})[name] = spec
    update_config(world, put)
    print(f"{name}: {command} will fail {times if times == 'always' else times + ' time(s)'}")


def cmd_unfail(world: str, name: str) -> None:
    update_config(world, lambda config: config.setdefault("fail", {}).pop(name, None) is not None)
    print(f"{name}: no injected failure")


def cmd_drift(world: str, name: str, lsn: str) -> None:
    if not lsn.strip():
        raise SimError("drift needs a non-empty LSN such as 0/DEADBEEF", 2)
    before: dict = {}

    def move(db: dict) -> None:
        before["lsn"] = db["lsn"]
        db["lsn"] = lsn
    update_db(world, name, move)
    print(f"{name}: replication start LSN changed by hand from {before['lsn']} to {lsn} (drift)")


def cmd_page(world: str, *message: str) -> None:
    # One line per page, so `tail -f pages.log` reads like a pager.
    text = " ".join(message).replace("\r", "").replace("\n", " | ")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with locked(world):
        with open(os.path.join(world, "pages.log"), "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {text}\n")
            fh.flush()
            os.fsync(fh.fileno())
    print(f"paged: {text[:80]}")


def cmd_counts(world: str) -> None:
    result = {}
    if os.path.isdir(world):
        for entry in sorted(os.listdir(world)):
            if entry.endswith(".json") and not entry.startswith(".") and entry != "config.json":
                db = read_json(os.path.join(world, entry)) or {}
                if "name" in db:
                    result[db["name"]] = {c: db.get(c, 0) for c in COUNTERS}
    print(json.dumps(result, sort_keys=True))


def cmd_reset(world: str) -> None:
    if not os.path.isdir(world):
        print(f"no world at {world}; nothing to reset")
        return
    # Delete only what this script writes, in case HANDOFF_SIM_WORLD points somewhere precious.
    left = []
    for entry in os.listdir(world):
        path = os.path.join(world, entry)
        if os.path.isfile(path) and (entry.endswith(".json") or entry in ("pages.log", ".lock")):
            os.unlink(path)
        else:
            left.append(entry)
    if left:
        raise SimError(f"removed the simulator's files but left {world} in place: it also "
                       f"holds {', '.join(sorted(left))}")
    os.rmdir(world)
    print(f"removed {world}")


def parse_number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise SimError(f"{what} must be a number, got {text!r}", 2) from None


# name -> (function, argument names, takes extra words)
COMMANDS = {
    "check": (cmd_check, ["DB"], False), "link": (cmd_link, ["DB"], False),
    "lsn": (cmd_lsn, ["DB"], False), "lag": (cmd_lag, ["DB"], False),
    "cutover": (cmd_cutover, ["DB"], False), "version": (cmd_version, ["DB"], False),
    "upgraded": (cmd_upgraded, ["DB"], False),
    "show": (cmd_show, ["DB"], False), "metric": (cmd_metric, ["NAME"], False),
    "set-metric": (cmd_set_metric, ["NAME", "VALUE"], False),
    "fail": (cmd_fail, ["DB", "COMMAND", "TIMES"], True), "unfail": (cmd_unfail, ["DB"], False),
    "drift": (cmd_drift, ["DB", "LSN"], False), "page": (cmd_page, [], True),
    "counts": (cmd_counts, [], False), "reset": (cmd_reset, [], False),
}


def usage() -> str:
    lines = ["usage: sim.py COMMAND [ARGS]   (world: $HANDOFF_SIM_WORLD, speed: $HANDOFF_SIM_SPEED)"]
    for name, (_, args, extra) in COMMANDS.items():
        lines.append("  " + " ".join([name, *args] + (["MESSAGE..."] if extra else [])))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    # No argparse: a database called `-rf` or `--help` is a name, never an option.
    if not argv or argv[0] in ("help", "-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"sim.py: unknown command {command!r}\n{usage()}", file=sys.stderr)
        return 2
    func, names, extra = COMMANDS[command]
    if len(args) < len(names) or (len(args) > len(names) and not extra):
        print(f"sim.py: {command} takes {' '.join(names) or 'no arguments'}"
              f"{' MESSAGE...' if extra else ''}, got {len(args)} argument(s)", file=sys.stderr)
        return 2
    try:
        func(world_dir(), *args)
    except SimError as exc:
        print(f"sim.py {command}: {exc}", file=sys.stderr)
        return exc.code
    except OSError as exc:
        print(f"sim.py {command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
