"""Approval policies: how many people approve, and what happens while nobody does.

Per step `approvals: {count, remind_after, escalate_after, expire_after}` and ledger-wide
`approval_policy:` (the step's fields win; engine.ledger.model.ApprovalPolicy):
- `count`: that many distinct people, none of them the requester: the session that
  asked (`awaiting_by`) and whoever started it (written with the request as
  `awaiting_started_by`/`_as`, and in its `session_start` / `claude_session_start`
  record). Until then the target keeps awaiting, its next_action saying "1 of 2
  approvals". People are told apart by what proves them (engine.approvals.persons):
  distinct names are distinct people only with verified approvers.
- `remind_after`: every so long, the same notify targets are paged again;
- `escalate_after`: once, the next `notify` entry (after the ones paged for approvals);
- `expire_after`: the request ends: the target is blocked with "approval request
  expired after 24h" and people are paged; it is never approved by default.
The session sends the reminders, escalations and expiries (engine.session.tending).
"""

from __future__ import annotations

from engine.approvals.approvers import table
from engine.approvals.persons import proven_by
from engine.codec.timefmt import parse_iso
from engine.ledger.model import Approval, ApprovalPolicy, Ledger, Step, Target


def policy_for(ledger: Ledger, step: Step) -> ApprovalPolicy:
    """The step's policy over the ledger's over the default (one approval, no timers)."""
    merged: dict = {}
    for layer in (ledger.approval_policy, step.approvals):
        if layer is not None:
            merged.update(layer.model_dump(exclude_unset=True))
    return ApprovalPolicy(**merged)


def expired(ledger: Ledger, target: Target, step: Step, now: float) -> float | None:
    """The policy's `expire_after` when `target`'s request for `step` has run past it at `now`
    (epoch seconds), else None. A waiting session blocks such a target (engine.session.tending);
    an approval never lands on it meanwhile (engine.ledger.ops.approve), whichever runtime waits."""
    since = parse_iso(target.awaiting_since) if target.state == "awaiting_approval" else None
    if since is None:
        return None
    after = policy_for(ledger, step).expire_after
    return after if after and now - since >= after else None


def standing(ledger: Ledger, name: str, step: Step, digest: str) -> list[Approval]:
    """The unused approvals of `step` on `name` bound to `digest`, one per person (the first):
    by what proves who gave them (engine.approvals.persons), not only by name."""
    approvers = table(ledger)
    seen: set[str] = set()
    out = []
    for approval in ledger.targets[name].approvals:
        if approval.step == step.name and not approval.used_at and approval.hash == digest:
            ids = proven_by(approvers, approval)
            if not ids & seen:
                seen |= ids
                out.append(approval)
    return out


def requesters(journal, ledger: Ledger, name: str) -> set[str]:
    """Names (case-folded) that asked for `name`'s approval: never approvers under a count.
    Also `os-user:U` when a person asked (`handoff run --as NAME`) running as OS user U,
    and `started-as:U` for the OS user who started the session that asked: an approval
    verified by that uid under another name is theirs too (ops.requester_rule). The starter
    is read from the request itself (`awaiting_started_by`/`_as`, and the gate's record), and
    from the last `session_start` of the asking session's id."""
    target = ledger.targets[name]
    asked = target.awaiting_by
    names = {asked.strip().casefold()} if asked else set()
    # The journal's gate, not only the file's `awaiting_by` (the asker can edit that), says who
    # asked: a person, and the OS user they ran as; or an agent's session. Indexed, as the
    # sessions' starts are: found however long the journal grew.
    gate = journal.last_of("gate", target=name, step=target.awaiting) if journal is not None and target.awaiting else None
    by = str(gate.get("actor") or "") if gate else ""
    if by and not by.startswith("agent:"):
        names.add(by.strip().casefold())
        if gate and gate.get("user"):
            names.add(ASKED_AS + str(gate["user"]).strip().casefold())
    # Who started the session that asked, written with the request (engine.session.gates): in the
    # ledger, found even when that session's start never reached the journal, and in the gate's record.
    starters = [(target.awaiting_started_by, target.awaiting_started_as)]
    if gate:
        starters.append((gate.get("started_by"), gate.get("started_as")))
    for started_by, started_as in starters:
        names.update(str(v).strip().casefold() for v in (started_by, started_as) if v)
        if started_as:
            names.add(STARTED_AS + str(started_as).strip().casefold())
    sids = {a.removeprefix("agent:") for a in (asked, by if by.startswith("agent:") else None) if a}
    for sid in sorted(sids):
        for kind in ("session_start", "claude_session_start"):
            record = journal.last_of(kind, session=sid) if journal is not None else None
            if record:
                names.update(str(record[k]).strip().casefold() for k in ("by", "user", "starter") if record.get(k))
                # `starter`: the OS user who started a Temporal workflow (its workers journal its start as theirs)
                names.update(STARTED_AS + str(record[k]).strip().casefold() for k in ("user", "starter") if record.get(k))
    return names


def asked_for_it(approval: Approval, asked: set[str]) -> bool:
    """Was `approval` given by one of `asked` (`requesters`): by name, or verified as the OS
    user who asked or started the asking session? Never one of a `count`'s people."""
    if approval.by.strip().casefold() in asked:
        return True
    uid = approval.user.strip().casefold() if approval.user and "os_user" in (approval.verified or "") else None
    return uid is not None and (ASKED_AS + uid in asked or STARTED_AS + uid in asked)


ASKED_AS = "os-user:"  # in `requesters`: the OS user a person's request ran as (no name has this form)
STARTED_AS = "started-as:"  # ... and the OS user who started the session that asked


def span(seconds: float) -> str:
    """`24h`, `30m`, `90s`: how a person wrote the duration."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def progress(have: int, need: int) -> str:
    """`1 of 2 approvals`."""
    return f"{have} of {need} approvals"


def describe_request(ledger: Ledger, name: str, ledger_dir: str, journal=None) -> str | None:
    """`1 of 2 approvals (alice); reminds every 1h, escalates after 4h, expires after 24h`
    for an awaiting target under a policy (status, explain); None with the default one. With
    the ledger's `journal`, an approval by whoever asked is not counted (as `approve` counts)."""
    target = ledger.targets[name]
    step = ledger.step(target.awaiting) if target.awaiting else None
    if step is None:
        return None
    pol = policy_for(ledger, step)
    parts = []
    if pol.count > 1:
        from engine.errors import HandoffError
        from engine.ledger.render import approval_hash

        try:
            have = standing(ledger, name, step, approval_hash(name, target, step, ledger_dir=ledger_dir))
        except HandoffError:  # a template that cannot render: `check` says why
            have = []
        asked = requesters(journal, ledger, name) if journal is not None and have else set()
        have = [a for a in have if not asked_for_it(a, asked)]
        parts.append(progress(len(have), pol.count) + (f" ({', '.join(a.by for a in have)})" if have else ""))
    parts += [f"{what} {span(v)}" for what, v in (("reminds every", pol.remind_after), ("escalates after", pol.escalate_after),
                                                   ("expires after", pol.expire_after)) if v]
    return "; ".join(parts) or None


def explain_approvals(ledger: Ledger) -> str | None:
    """How each irreversible step is approved (`check --explain`): who, how many, the timers."""
    from engine.approvals import host_table
    from engine.approvals.approvers import how, table
    from engine.ledger.model import Approver

    steps = [s for s in ledger.steps() if not s.reversible]
    if not steps:
        return None
    approvers = table(ledger)
    if approvers is None:
        who = "anyone but the asker (nothing proves who)"
    else:
        who = ", ".join(f"{a} (OS login, proves little)" if isinstance(a, str) else f"{a.name} ({how(a)})"
                        for a in approvers if isinstance(a, (str, Approver))) or "nobody"
        if approvers is not ledger.approvers:
            who += f" (the host's table, {host_table.path()}: the ledger's own is not used)"
    lines = [f"Who approves irreversible steps: {who}"]
    for step in steps:
        pol = policy_for(ledger, step)
        timers = [f"{what} {span(v)}" for what, v in (("reminds every", pol.remind_after),
                                                      ("escalates after", pol.escalate_after),
                                                      ("expires after", pol.expire_after)) if v]
        lines.append(f"  {step.name}: {pol.count} {'person' if pol.count == 1 else 'distinct people'}, never the requester"
                     + (f"; {', '.join(timers)}" if timers else ""))
    return "\n".join(lines)
