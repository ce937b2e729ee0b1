"""The ledger model (format v1): pydantic classes for what `ledger.yaml` holds.

Field names follow the source article. Only `task` and `targets` are required;
unknown keys at every level are kept (`extra="allow"`) and written back. The
engine never drops what a human wrote.

No `from __future__ import annotations` here: with it every annotation is a string that
pydantic parses and evaluates when it builds the classes, a few milliseconds of every
`handoff` process (the hook, status, approve, the screen); the one forward reference is quoted.
"""

import os
import re
import shlex
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator
from pydantic.json_schema import JsonDict, JsonValue

from engine.audit.redact import BadPattern, check_patterns
from engine.codec.textsafe import CONTROL_CODES

# pydantic looks for plugins (its `pydantic` entry-point group) when it builds its first class,
# reading the metadata of every installed distribution: 9 ms of every process that reads a
# ledger (101 distributions in the test venv), more with a bigger one. The ledger's classes are
# built with that search off, by pydantic's documented switch, set only while this module builds
# them and put back at its end, so the processes the engine starts later never see it (it is
# imported before any is started; an import that fails part-way ends the program), and nothing
# instruments the validation of a ledger. tests/unit/test_lazy_imports.py checks both.
_PLUGINS_SWITCH = "PYDANTIC_DISABLE_PLUGINS"
_plugins_before = os.environ.get(_PLUGINS_SWITCH)
os.environ[_PLUGINS_SWITCH] = "__all__"

# The article's state machine; always known, so a ledger without a runbook is valid.
BASE_STATES: tuple[str, ...] = (
    "queued",
    "checked",
    "in_progress",
    "replicating",
    "verified",
    "awaiting_approval",
    "done",
    "failed",
    "blocked",
)
# The order the article's summary line uses: finished first, then in flight, then waiting.
SUMMARY_ORDER: tuple[str, ...] = (
    "done",
    "awaiting_approval",
    "verified",
    "replicating",
    "in_progress",
    "checked",
    "queued",
    "blocked",
    "failed",
)

# A command: an argv list, or one string split the way a shell would (never run by one).
ARGV_SCHEMA = {
    "anyOf": [
        {"type": "array", "items": {"type": ["string", "number", "boolean"]}},
        {"type": "string", "description": "split like a shell would split it; never run by one"},
    ]
}
Argv = Annotated[list[str], WithJsonSchema(ARGV_SCHEMA)]
# In the schema only: `check` reports these, so editors show them as you type, while the
# engine still loads such a ledger (it stays viewable, and the file is never rejected).
POSITIVE: JsonDict = {"exclusiveMinimum": 0}
SLACK_ID = r"^[TE][A-Z0-9]{2,}/[UW][A-Z0-9]{2,}$"  # an approver's `slack`: workspace (or enterprise) id / member id
SLACK_CHANNEL = r"^[CGD][A-Z0-9]{2,}$"  # a channel id (public, private, DM): names change, ids do not
CLOSED: JsonDict = {"additionalProperties": False}  # an unknown key in a step or metric is a typo: `check` says so


def _any_of(schema: JsonDict) -> list[JsonValue]:
    """The `anyOf` list of a field's schema (pydantic writes one for an optional field)."""
    choices = schema["anyOf"]
    if not isinstance(choices, list):
        raise TypeError(f"expected an anyOf list in {schema!r}")
    return choices


def _argv(value: Any) -> Any:
    """Accept an argv list, or a string split the way a shell would (never run by one)."""
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list):
        return [v if isinstance(v, str) else str(v) for v in value]
    return value


def _pattern(value: str) -> str:
    """A `redact:` item must compile: a bad one would break every later redaction."""
    try:
        check_patterns([value])
    except BadPattern as err:
        raise ValueError(str(err)) from None
    return value


def _unseen(name: str) -> bool:
    """Only spaces and characters that draw nothing (engine.codec.textsafe)."""
    return all(c.isspace() or ord(c) in CONTROL_CODES for c in name)


class Node(BaseModel):
    """Common config: keep unknown keys, validate on assignment off (the engine assigns)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Approval(Node):
    """One recorded human approval of one step on one target."""

    by: str
    user: str
    at: str
    step: str
    hash: str
    checkpoint: str | None = None
    comment: str | None = None
    used_at: str | None = None
    used_by: str | None = None
    # How the approver was verified (engine.approvals.approvers): none | os_user | ssh_key
    # | os_user+ssh_key. With ssh_key, `signed` is the exact payload signed and `sig` the
    # OpenSSH signature (armored), both checked again before the step is spawned.
    verified: str | None = None
    signed: str | None = None
    sig: str | None = None
    # `via: slack`: given from Slack (engine.slack), `slack` naming the Slack user, team,
    # channel and message ts; `verified: slack` means the signed request mapped to an approver.
    via: str | None = None
    slack: dict[str, str] | None = None


class Approver(Node):
    """A verified approver: `name` is who the approval says approved; `os_user`: the kernel
    uid of the approving process must be that user's; `ssh_key`: the approval carries an
    OpenSSH signature by this public key (`ssh-keygen -Y sign -n handoff-approval`);
    `slack`: `TEAM/USER` (Slack ids, e.g. T0123/U0456): this person approves from Slack
    (`handoff slack`), the request proved by Slack's signature, never by a display name."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=CLOSED)
    name: str
    os_user: str | None = None
    ssh_key: str | None = None
    slack: str | None = Field(default=None, pattern=SLACK_ID)


class InFlight(Node):
    """Write-ahead intent: a step started and not yet recorded as finished."""

    step: str
    session: str | None = None
    host: str | None = None
    pid: int | None = None
    pgid: int | None = None
    started_at: str | None = None
    attempt: int | None = None
    token: str | None = None  # in the step's environment: finds the process if its pid never reached the ledger


class Evidence(Node):
    """Summary of the last step run on a target; its output tail is in the journal."""

    step: str | None = None
    exit_code: int | None = None
    duration: float | None = None
    at: str | None = None
    timed_out: bool | None = None
    journal: int | None = None


class Target(Node):
    """One unit of work (a database, a cluster, a service)."""

    # A bare number in YAML (`checkpoint: 42`) is still a checkpoint string; done in
    # pydantic-core, not a Python validator: 10,000 targets are validated on a cold read.
    model_config = ConfigDict(extra="allow", populate_by_name=True, coerce_numbers_to_str=True)

    state: str = "queued"
    checkpoint: str | None = None
    last_action: str | None = None
    next_action: str | None = None
    verified_at: str | None = None
    reason: str | None = None
    changed_at: str | None = None
    touched_at: str | None = None
    in_flight: InFlight | None = None
    awaiting: str | None = None
    awaiting_by: str | None = None
    # Who started the session that asked (its `--as` name, its OS user): written with the
    # request, so the starter rule holds when that session's start is not in the journal.
    awaiting_started_by: str | None = None
    awaiting_started_as: str | None = None
    awaiting_since: str | None = None
    approvals: list[Approval] = Field(default_factory=list)
    evidence: Evidence | None = None
    # {at, fields}: changed by hand in a way no runbook step would (engine.store.outside);
    # sessions treat it like drift until a person runs `handoff reconcile`.
    changed_outside: dict[str, Any] | None = None

    def clear_request(self) -> None:
        """It no longer awaits an approval: the step asked for, who asked, who started the
        asking session and since when all go with the request."""
        self.awaiting = self.awaiting_by = self.awaiting_since = None
        self.awaiting_started_by = self.awaiting_started_as = None



_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _seconds(value: Any) -> Any:
    """`90`, `90s`, `30m`, `1h`, `2d` as seconds; anything else is left for validation to refuse."""
    if isinstance(value, str):
        text = value.strip()
        unit = _UNITS.get(text[-1:].lower())
        try:
            return float(text[:-1]) * unit if unit else float(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a duration: write seconds, or a number with s, m, h or d (30m, 24h)") from None
    return value


Duration = Annotated[float, Field(gt=0), WithJsonSchema({"anyOf": [
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*[smhdSMHD]?\s*$"}]})]


class ApprovalPolicy(Node):
    """How an irreversible step is approved (per step `approvals:`, ledger-wide
    `approval_policy:`; the step's fields win): `count` distinct people, none the
    requester; `remind_after` re-pages the same notify targets, `escalate_after` pages
    the next `notify` entry, `expire_after` blocks the target (never approves)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=CLOSED)
    count: int = Field(default=1, ge=1)
    remind_after: Duration | None = None
    escalate_after: Duration | None = None
    expire_after: Duration | None = None

    _durations = field_validator("remind_after", "escalate_after", "expire_after", mode="before")(_seconds)


class Step(Node):
    """One runbook step: a transition `from` -> `to` done by running `run`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=CLOSED)
    name: str
    from_: str = Field(alias="from")
    to: str
    run: Argv | None = None
    reversible: bool = False
    timeout: float | None = None
    retries: int = 0
    check: Argv | None = None
    verify: Argv | None = None
    until: str | None = None
    interval: float | None = None
    description: str | None = None
    approvals: ApprovalPolicy | None = None  # engine.approvals.policy
    # False: running this (reversible, read-only) step does not count as touching its
    # target under "never touch more than N" (engine.ledger.touched); irreversible steps always do.
    touches: bool = True

    _split = field_validator("run", "check", "verify", mode="before")(_argv)

    @field_validator("name")
    @classmethod
    def _typable(cls, value: str) -> str:
        # Approving a batch means typing the step's name: one nobody can see could pass with nothing typed.
        if _unseen(value):  # empty too
            raise ValueError(f"step name {value!r} is nothing a person can see or type; give the step a name")
        return value

    @model_validator(mode="before")
    @classmethod
    def _from_by_its_name(cls, data: Any) -> Any:
        """`from_` is this model's name for `from` in Python, never a key of the file: read,
        it stood for `from`, and the engine's next rewrite of the step wrote it back as a
        key nothing reads, so the file no longer loaded."""
        if isinstance(data, dict) and "from_" in data:
            raise ValueError("`from_` is not a key of a runbook step: write `from:` (the state the step starts from)")
        return data


class Runbook(Node):
    """The steps, in order; may declare extra states."""

    steps: list[Step] = Field(default_factory=list)
    states: list[str] = Field(default_factory=list)


METRIC_MAX_AGE = 300.0  # seconds a metric reading stays good enough to call an invariant ok


class Metric(Node):
    """A reading a session takes by running `run`, which prints a number (maybe with %).

    `max_age`: how many seconds a reading counts; an older one makes every invariant on
    the metric `unknown (stale)` rather than ok (the TUI, `handoff status` and `check` agree)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=CLOSED)
    run: Argv
    description: str | None = None
    max_age: float = Field(
        default=METRIC_MAX_AGE,
        gt=0,
        description="Seconds a reading of this metric stays valid; an older reading makes its invariants "
        "unknown (stale). Default 300.",
    )

    _split = field_validator("run", mode="before")(_argv)


class SlackChannel(Node):
    """`notify: [{slack: {channel: C0123ABC}}]`: where `handoff slack` posts approval requests.
    `os_user`: the OS user `handoff slack` runs as: only its process records an approval from
    Slack, and leaves a file of that user's proving it (engine.approvals.attest). Where the
    host keeps its own approvers table, that table's `slack: {os_user: ...}` is used instead."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=CLOSED)
    channel: str = Field(json_schema_extra={"pattern": SLACK_CHANNEL})
    os_user: str | None = None

    @field_validator("channel")
    @classmethod
    def _channel_id(cls, value: str) -> str:
        if not re.fullmatch(SLACK_CHANNEL, value):
            raise ValueError(f"{value[:40]!r} is not a Slack channel id: write the id (C0123ABC: channel details, "
                             "at the bottom), not the channel's name; Slack posts by id")
        return value


class Notifier(Node):
    """Where pages go: a Slack-compatible webhook, an argv given the message, or the
    Slack channel `handoff slack` posts approval requests to (and takes approvals from)."""

    webhook: str | None = None
    run: Argv | None = None
    slack: SlackChannel | None = None
    on: list[str] | None = None

    _split = field_validator("run", mode="before")(_argv)


class Pause(Node):
    """Why the ledger is paused, and by whom."""

    by: str | None = None
    why: str | None = None
    at: str | None = None


class Budget(Node):
    """How much a session may spend before it hands off."""

    steps: int | None = Field(default=None, json_schema_extra=POSITIVE)
    minutes: float | None = Field(default=None, json_schema_extra=POSITIVE)
    tokens: int | None = Field(default=None, json_schema_extra=POSITIVE)
    handoff_at: float | None = Field(default=None, json_schema_extra={**POSITIVE, "maximum": 1})

    @model_validator(mode="before")
    @classmethod
    def _known_numbers(cls, data: Any) -> Any:
        """A misspelt key (`stepz`) would silently mean no limit, and `true` is not a number: refused."""
        if isinstance(data, dict):
            known = ("steps", "minutes", "tokens", "handoff_at")
            for key, value in data.items():
                if key not in known:
                    raise ValueError(f"unknown key {key!r} in budget: (a budget has {', '.join(known)})")
                if isinstance(value, bool):
                    raise ValueError(f"budget.{key} is {str(value).lower()}, not a number")
        return data


class Agent(Node):
    """How a model-driven session works on this ledger (`agent:`; the Claude planner and the
    Claude Code hooks read it). `model`: the Claude model (default: the one named in
    engine.planners.models); `review`: `deterministic` checks every handoff note against the
    ledger, `model` adds an independent model's review; `unknown_commands`: what the Claude
    Code hooks do with a command the runbook does not know (`allow`, `ask` a person, `deny`)."""

    model: str | None = None
    review: Literal["deterministic", "model"] = "deterministic"
    unknown_commands: Literal["allow", "ask", "deny"] = "allow"  # reading and investigating is the agent's job


class TemporalRef(Node):
    """Where the Temporal workflow that holds a ledger's lease lives: enough for any
    command to signal it (`handoff approve` wakes it) and for people to find it."""

    address: str
    namespace: str = "default"
    task_queue: str
    workflow_id: str


class SessionLease(Node):
    """The lease of whoever drives the ledger: a session, a Claude Code session or a
    Temporal workflow (`runtime`). Its heartbeat lives beside the ledger, not in it.
    `boot_id` and `pid_ns` say where `pid` can be checked (engine.lease.rules)."""

    id: str
    runtime: str | None = None  # session (default) | claude-code | temporal | langgraph (id: the thread id)
    host: str | None = None
    pid: int | None = None
    pid_start: float | None = None
    boot_id: str | None = None
    pid_ns: str | None = None
    user: str | None = None
    started_at: str | None = None
    planner: str | None = None
    allow_unenforced: bool | None = None  # started with --allow-unenforced
    stop_requested: bool = False
    stop_requested_by: str | None = None
    temporal: TemporalRef | None = None  # runtime temporal: the workflow holding the lease
    bind: str | None = None  # runtime claude-code: hash of the session's secret (engine.lease.binding)


class PreviousNote(Node):
    """The handoff note a newer one replaced, kept so a human's words outlive a session's."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, coerce_numbers_to_str=True)

    text: str
    by: str | None = None
    at: str | None = None


class Ledger(Node):
    """The whole ledger: the only memory of the job."""

    task: str
    id: str | None = None  # a UUID the first Temporal start writes: the workflow id is handoff-<id>
    owner_shift: str | None = None
    started: str | None = None
    environment: str | None = None
    revision: int = 0
    paused: Pause | None = Field(default=None, json_schema_extra=lambda s: _any_of(s).extend(
        [{"type": "boolean"}, {"type": "string"}]))  # `paused: true`, `paused: "why"` (see _paused)
    session: SessionLease | None = None
    budget: Budget | None = None
    agent: Agent | None = None
    invariants: list[str | dict[str, Any]] = Field(default_factory=list)
    approval_policy: ApprovalPolicy | None = None  # every irreversible step's, unless the step says otherwise
    approvers: list[str | Approver] | None = None  # a plain name is an OS login (it proves little: `check --strict`)
    notify: list[Notifier] = Field(default_factory=list)
    metrics: dict[str, Metric] = Field(default_factory=dict)
    redact: list[Annotated[str, AfterValidator(_pattern)]] = Field(default_factory=list)
    runbook: Runbook | None = None
    targets: dict[str, Target] = Field(json_schema_extra=lambda s: s.update(
        additionalProperties={"anyOf": [s["additionalProperties"], {"type": "null"}]}))  # `db-19:` alone is queued
    handoff_note: str | None = None
    handoff_note_by: str | None = None
    handoff_note_at: str | None = None
    previous_note: PreviousNote | None = None

    @field_validator("started", "task", "owner_shift", "environment", "handoff_note", "handoff_note_by", "handoff_note_at", mode="before")
    @classmethod
    def _scalar_text(cls, value: Any) -> Any:
        # A number where text is wanted is the text a person typed: `1.30` stays "1.30".
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: int) -> int:
        # The engine counts its writes from 0; below 0 is a hand edit, not an old copy.
        if value < 0:
            raise ValueError(f"revision is {value}, but the engine counts its writes from 0: put back the "
                             "revision the engine last wrote (`handoff journal` shows its writes), or 0 for a new ledger")
        return value

    @field_validator("approvers", mode="before")
    @classmethod
    def _approvers(cls, value: Any) -> Any:
        # A union's own error ("approvers.0.str: Input should be a valid string") says nothing a person can use.
        for i, item in enumerate(value if isinstance(value, list) else []):
            if isinstance(item, dict) and not isinstance(item.get("name"), str):
                raise ValueError(f"approver {i + 1} needs a `name`: write {{name: alice, os_user: alice}} or "
                                 "{name: alice, ssh_key: \"ssh-ed25519 AAAA... alice@laptop\"}, or a plain OS login")
            if isinstance(item, dict) and not (item.get("os_user") or item.get("ssh_key") or item.get("slack")):
                raise ValueError(f"approver {item['name']!r} is a mapping with no `os_user`, `ssh_key` or `slack`: "
                                 "add one, or write the plain name")
            if isinstance(item, dict) and "slack" in item and not re.fullmatch(SLACK_ID, str(item["slack"])):
                raise ValueError(f"approver {item['name']!r}: slack {item['slack']!r} is not TEAM/USER in Slack's ids "
                                 "(write slack: T0123ABC/U0456DEF: the workspace id, a slash, the member id from the "
                                 "person's Slack profile, \"Copy member ID\")")
        return value

    @field_validator("previous_note", mode="before")
    @classmethod
    def _previous_note(cls, value: Any) -> Any:
        # Written by hand as a bare text, it is a note with no author or time.
        if isinstance(value, str):
            return {"text": value}
        return value

    @field_validator("paused", mode="before")
    @classmethod
    def _paused(cls, value: Any) -> Any:
        # `paused: true` / `paused: false` are fine by hand; the engine writes a mapping.
        if value is True:
            return {}
        if value is False:
            return None
        if isinstance(value, str):
            return {"why": value}
        return value

    @field_validator("targets", mode="before")
    @classmethod
    def _targets(cls, value: Any) -> Any:
        # `db-19:` with nothing after it is a queued target.
        if isinstance(value, dict):
            return {str(k): ({} if v is None else v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _states_known(self) -> "Ledger":
        self.check_states()
        return self

    def check_states(self, names: Iterable[str] | None = None) -> None:
        """Every target (or those `names`) is in a state the article or the runbook knows
        (ValueError if not)."""
        known = self.states()
        pairs = self.targets.items() if names is None else ((n, self.targets[n]) for n in names if n in self.targets)
        for name, target in pairs:
            if not name.strip() or not (name.isascii() and name.isprintable()) and _unseen(name):
                raise ValueError(f"target {name!r} has no name a person can see or type: the typed-name check "
                                 "before an irreversible step could pass with nothing typed; give it a name")
            if target.state not in known:
                raise ValueError(
                    f"target {name!r} is in state {target.state!r}, which neither the "
                    f"article's states nor the runbook declare; valid states: "
                    f"{', '.join(sorted(known))}"
                )

    # -- queries every part needs -------------------------------------------------

    def states(self) -> set[str]:
        """Every state this ledger knows: the article's plus the runbook's."""
        known = set(BASE_STATES)
        if self.runbook:
            known.update(self.runbook.states)
            for step in self.runbook.steps:
                known.add(step.from_)
                known.add(step.to)
        return known

    def steps(self) -> list[Step]:
        return list(self.runbook.steps) if self.runbook else []

    def step(self, name: str) -> Step | None:
        for step in self.steps():
            if step.name == name:
                return step
        return None

    def probe_step(self, state: str) -> Step | None:
        """The step whose `to` is `state` and which has a `verify`: its probe."""
        for step in self.steps():
            if step.to == state and step.verify:
                return step
        return None

    def position(self, name: str) -> str:
        """Where guards see a target: an awaiting one sits in its awaiting step's `from`."""
        target = self.targets[name]
        if target.state == "awaiting_approval" and target.awaiting:
            step = self.step(target.awaiting)
            if step is not None:
                return step.from_
        return target.state

    def counts(self) -> dict[str, int]:
        """Targets per state, in the article's summary order (runbook states last)."""
        counts: dict[str, int] = {}
        for target in dict.values(self.targets):  # only reads: no copy-on-write views (engine.store.cow)
            counts[target.state] = counts.get(target.state, 0) + 1
        order = {s: i for i, s in enumerate(SUMMARY_ORDER)}
        return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))


if _plugins_before is None:  # the switch as it was (see the top of this module)
    del os.environ[_PLUGINS_SWITCH]
else:
    os.environ[_PLUGINS_SWITCH] = _plugins_before
