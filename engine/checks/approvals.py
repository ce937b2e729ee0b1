"""Approvals that can never be used: unused ones whose hash no longer matches what their
step would run (the command, its timeout or the checkpoint changed since, or they were
given under an older binding). A session will ask again; `check` says so (a warning)."""

from __future__ import annotations

from engine.errors import HandoffError
from engine.ledger.model import Ledger
from engine.ledger.render import approval_hash


def stale_approvals(ledger: Ledger, ledger_dir: str) -> list[str]:
    """One sentence per unused approval that no longer matches (rendered in `ledger_dir`)."""
    out = []
    for name, t in ledger.targets.items():
        for a in t.approvals:
            step = ledger.step(a.step)
            if a.used_at or step is None or step.reversible or not step.run:
                continue
            try:
                current = approval_hash(name, t, step, ledger_dir=ledger_dir)
            except HandoffError:
                continue  # an unknown placeholder: the analysis reports the step itself
            if a.hash != current:
                out.append(f"{name}: the approval of {a.step} by {a.by} at {a.at} no longer matches what would run "
                           f"(hash {a.hash}, now {current}); approve it again")
    return out


def unverified_approvers(ledger: Ledger, *, on_database: bool = False) -> list[tuple[str, str]]:
    """(message, suggestion) when the ledger's irreversible steps are approved by people
    the engine cannot tell from an agent: no `approvers`, plain names, Slack approvers with
    no OS user named for the Slack process; and on a PostgreSQL ledger (`on_database`),
    where what proves an approval is the database role that recorded it
    (engine.store.pg_attest), what that rests on, for approvers without an `ssh_key`."""
    if not any(not step.reversible for step in ledger.steps()):
        return []
    fix = ("list approvers as {name: alice, os_user: alice} with agents running as their own OS user, or "
           "{name: alice, ssh_key: \"ssh-ed25519 ...\"} (docs/operating.md, Approvals and identity)")
    from engine.approvals.approvers import slack_recorder, table

    approvers = table(ledger)  # the host's, where it keeps one (engine.approvals.host_table)
    if approvers is None:
        return [("no approvers: anyone but the asker may approve, and nothing proves who did", fix)]
    plain = [a for a in approvers if isinstance(a, str)]
    if plain:
        return [(f"approvers {', '.join(plain)} are plain names: they prove nothing about who approved "
                 "(an agent running as that OS user can approve as them)", fix)]
    by_slack = [a.name for a in approvers if not isinstance(a, str) and a.slack]
    if by_slack and slack_recorder(ledger) is None:
        return [(f"approvers {', '.join(by_slack)} approve from Slack, and no OS user is named for `handoff slack`: an "
                 "agent that runs the engine's code can record an approval \"from Slack\" as them",
                 "run `handoff slack` as its own OS user and name it: notify: [{slack: {channel: C0123ABC, os_user: "
                 "handoff-slack}}] (or `slack: {os_user: handoff-slack}` in the host's approvers table)")]
    by_role = [a.name for a in approvers if not isinstance(a, str) and (a.os_user or a.slack) and not a.ssh_key]
    if on_database and by_role:
        return [(f"approvers {', '.join(by_role)} are proved by the database role that recorded their approval (the "
                 "OS user's name): that holds only where each of them connects as their own role (peer "
                 "authentication) and agents log in with roles that own no handoff table and are not superusers",
                 "set the roles up so (docs/operating.md, Approvals and identity), or give them an ssh_key as well: "
                 "{name: alice, os_user: alice, ssh_key: \"ssh-ed25519 ...\"}")]
    return []


def shared_approvers(ledger: Ledger) -> list[str]:
    """One sentence per OS user, ssh key or Slack id that proves two entries of the approvers
    table (two names on one login, a plain login also an entry's `os_user`): one person to the
    engine, whose approvals count once under `count` (engine.approvals.persons); and one per
    name listed twice (two Slack ids on one name: found by id, checked by name)."""
    if not any(not step.reversible for step in ledger.steps()):
        return []
    from engine.approvals.approvers import table
    from engine.approvals.persons import shared_names, shared_proofs

    return shared_proofs(table(ledger)) + shared_names(table(ledger))
