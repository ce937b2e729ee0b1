"""Every `HANDOFF_*` environment variable the engine reads, with its default and meaning.

There is no config file: settings are flags, the ledger, and these variables. This table
is the one place they are named; the readers below take their defaults from it, and
`handoff --help` and docs/operating.md ("Environment") show it (a test checks both, and
that no `HANDOFF_*` name in the source is missing here).

A number of seconds (or a count) that is unset, not a number or out of range means the
default: a typo never turns a safety timeout into zero.
"""

from __future__ import annotations

import os
from typing import NamedTuple


class Setting(NamedTuple):  # not a dataclass: the Claude Code hook's journal record reads settings (engine.hooks.facts)
    name: str
    default: float | str | None
    doc: str
    unit: str = "seconds"  # "seconds", "count", "text", "names" (comma-separated)
    zero_ok: bool = False  # for numbers: 0 is a meaningful value (not "use the default")
    internal: bool = False  # set by the engine for the processes it spawns, not by people


SETTINGS: tuple[Setting, ...] = (
    Setting("HANDOFF_LEASE_STALE_AFTER", 180.0, "a lease without a heartbeat this long is stale and may be taken over"),
    Setting("HANDOFF_LOCK_TIMEOUT", 10.0, "how long a writer waits for the ledger's lock, the journal's or the Slack record's, before it names the holder and gives up"),
    Setting("HANDOFF_DB_OUTAGE_SECONDS", 60.0, "how long a running session rides out a PostgreSQL outage before it stops (exit 6)",
            zero_ok=True),
    Setting("HANDOFF_UNTIL_PROGRESS_EVERY", 30.0, "at most one journaled reading of a running `until` step this often (0: every reading)",
            zero_ok=True),
    Setting("HANDOFF_TEMPORAL_POLL", 30.0, "how often a Temporal workflow's lease keeper re-reads the ledger"),
    Setting("HANDOFF_TEMPORAL_HEARTBEAT_TIMEOUT", 20.0, "a Temporal step activity silent this long is taken for dead"),
    Setting("HANDOFF_TEMPORAL_IDLE", 600.0, "the workflow's own timer when nothing wakes it"),
    Setting("HANDOFF_TEMPORAL_HISTORY_MAX", 4000, "history events after which a workflow run continues as new (at least 100)",
            unit="count"),
    Setting("HANDOFF_TEMPORAL_PLANNER_BACKOFF", 5.0, "the first wait after a model outage in a Temporal run (doubling, at most 5 min)"),
    Setting("HANDOFF_LANGGRAPH_CHECKPOINTER", None, "the default `--checkpointer` URL of `--runtime langgraph`", unit="text"),
    Setting("HANDOFF_APPROVERS_FILE", None, "the host's approvers table where /etc/handoff-tui/approvers.yaml does not exist: for tests (an agent chooses its own environment; link the /etc path instead)", unit="text"),
    Setting("HANDOFF_SLACK_API_URL", "https://slack.com/api/", "where `handoff slack` reaches Slack's Web API (tests point it at a local fake)",
            unit="text"),
    Setting("HANDOFF_SERVE_TOKEN", None, "the token of `handoff-tui serve` (observers open the page with it once), kept off the command line; `--token-file`/`--token` win over it",
            unit="text"),
    Setting("HANDOFF_SERVE_SEEN_AFTER", 15.0, "a `handoff-tui serve` viewer's tab open this long counts as a look: their \"since you last looked\" mark advances"),
    Setting("HANDOFF_WRITE_BYTECODE", None, "`0` stops the engine writing its own bytecode under PYTHONDONTWRITEBYTECODE",
            unit="text"),
    Setting("HANDOFF_FAILPOINTS", None, "named points where a test freezes this process (tests only)", unit="names"),
    Setting("HANDOFF_FAILPOINT_PAUSE", None, "a failpoint pauses only its thread: it creates this file and waits until "
            "it is removed (tests only)", unit="text"),
    Setting("HANDOFF_AGENT", None, "set for every process an agent session spawns: people-only operations refuse it",
            unit="text", internal=True),
    Setting("HANDOFF_STEP_TOKEN", None, "set for a step process: the intent token a later session finds it by",
            unit="text", internal=True),
    Setting("HANDOFF_SERVE_VIEWER", None, "set by `handoff-tui serve` for a viewer's process: whose \"since you last looked\" mark it keeps",
            unit="text", internal=True),
    Setting("HANDOFF_SERVE_VIEW", None, "set by `handoff-tui serve` for a viewer's process: the target and filter the page's URL asked for",
            unit="text", internal=True),
    Setting("HANDOFF_DEMO_SCREEN", None, "set by `handoff-tui --demo` for the demo's script: the screen's pid (the script ends the "
            "demo once that screen is gone)", unit="text", internal=True),
)
BY_NAME = {s.name: s for s in SETTINGS}


def default(name: str):
    """The default of setting `name` (a KeyError for a name not in the table)."""
    return BY_NAME[name].default


def seconds(name: str) -> float:
    """The number setting `name` says, or its default when it says nothing usable."""
    setting = BY_NAME[name]
    fallback = float(setting.default)  # type: ignore[arg-type]
    try:
        value = float(os.environ.get(name, fallback))
    except ValueError:
        return fallback
    if value != value or value < 0 or (value == 0 and not setting.zero_ok):  # NaN, negative, or a zero that means nothing
        return fallback
    return value


def text(name: str) -> str | None:
    """The text setting `name` says (None when unset or empty)."""
    BY_NAME[name]  # only names in the table are read
    return os.environ.get(name) or None


def describe() -> str:
    """The table as plain text, for `handoff --help`."""
    lines = ["environment (HANDOFF_*; unset or unusable means the default):"]
    for s in SETTINGS:
        if s.internal:
            continue
        shown = "unset" if s.default is None else (f"{s.default:g} s" if s.unit == "seconds" else f"{s.default}")
        lines.append(f"  {s.name:<36} {s.doc} (default {shown})")
    return "\n".join(lines)
