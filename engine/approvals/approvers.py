"""Who may approve, and how the engine knows it was them (`approvers:` in the ledger).

- absent: anyone but the one who asked (the approval proves only the OS user it ran as);
- a plain name (`alice`): the OS login of the approving process must be one of them.
  It proves nothing when an agent runs as that same OS user: `check --strict` says so;
- `{name: alice, os_user: alice}`: the approval is by `alice`, and the kernel uid of the
  approving process must be alice's (the hard guarantee when agents have their own user);
- `{name: alice, ssh_key: "ssh-ed25519 AAAA..."}`: the approval carries alice's OpenSSH
  signature over its payload (engine.approvals.sshsig). Both keys: both checks;
- `{name: alice, slack: T0123/U0456}`: alice approves from Slack (`handoff slack`): the
  request carries Slack's signature and the workspace/member ids map to her through this
  table only, never a display name or an e-mail. On that path her other keys are not
  asked for (the Slack process runs as its own OS user); on the CLI they are, and an
  approver with only `slack` approves from Slack only. Whoever can run the engine's code
  can say "Slack says alice", so the OS user `handoff slack` runs as is named
  (`slack_recorder`): only its process records such an approval, and for a file ledger
  leaves that user's file proving it (engine.approvals.attest), which no agent can forge.
Checked when the approval is given (`admit`) and again under the fence (`recheck`). Where
the host has its own table (engine.approvals.host_table, root's), that table is used instead.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

from engine.approvals import host_table, sshsig
from engine.codec.timefmt import now_iso, parse_iso
from engine.errors import Refused
from engine.ledger.model import Approval, Approver, Ledger


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.strip().casefold() == b.strip().casefold()


@dataclass(frozen=True)
class Signed:
    """A signed approval payload, made before the ledger's transaction (a person may have
    to touch a key): the payload text and its armored signature."""

    payload: str
    sig: str


@dataclass(frozen=True)
class SlackId:
    """Who approved from Slack, as Slack's signed request says (engine.slack): the
    workspace (or enterprise) id and member id, and the channel and message ts clicked."""

    team: str
    user: str
    channel: str | None = None
    ts: str | None = None

    @property
    def ref(self) -> str:
        """`T0123/U0456`: how the `approvers:` table names a Slack identity."""
        return f"{self.team}/{self.user}"

    def record(self) -> dict[str, str]:
        return {k: v for k, v in (("user", self.user), ("team", self.team), ("channel", self.channel),
                                  ("ts", self.ts)) if v}


def table(ledger: Ledger) -> list[str | Approver] | None:
    """Who may approve: the host's table where there is one (root's: the agent cannot
    rewrite it), else the ledger's `approvers:`; None: anyone but the requester."""
    host = host_table.table()
    return host if host is not None else ledger.approvers


def slack_entry(ledger: Ledger, team: str, user: str) -> Approver | None:
    """The approver whose `slack` is `team/user` exactly (ids, never names), or None."""
    ref = f"{team}/{user}"
    return next((a for a in table(ledger) or [] if isinstance(a, Approver) and a.slack == ref), None)


def verified_entry(ledger: Ledger, name: str) -> Approver | None:
    """The verified approver entry named `name` (the `--as` name), or None."""
    return next((a for a in table(ledger) or [] if isinstance(a, Approver) and _same(a.name, name)), None)


def plain_names(ledger: Ledger) -> list[str]:
    return [a for a in table(ledger) or [] if isinstance(a, str)]


def how(entry: Approver | None) -> str:
    """How `entry` may approve: none | os_user | ssh_key | slack, joined by `+` (os_user+ssh_key)."""
    if entry is None:
        return "none"
    return "+".join(kind for kind, on in (("os_user", entry.os_user), ("ssh_key", entry.ssh_key),
                                          ("slack", entry.slack)) if on) or "none"


def _local_how(entry: Approver) -> str:
    """What an approval given here (not from Slack) by `entry` is verified by."""
    return "+".join(kind for kind, on in (("os_user", entry.os_user), ("ssh_key", entry.ssh_key)) if on) or "none"


def uid_is(user: str, uid: int | None = None) -> str | None:
    """None when the kernel uid of this process (or `uid`) is `user`'s; else why not."""
    uid = os.getuid() if uid is None else uid
    try:
        wanted = pwd.getpwnam(user).pw_uid
    except KeyError:
        return f"os_user {user!r} is no user on this host"
    if wanted != uid:
        try:
            running = pwd.getpwuid(uid).pw_name
        except KeyError:
            running = str(uid)
        return f"the approving process runs as uid {uid} ({running}), not {user}'s uid {wanted}"
    return None


def slack_recorder(ledger: Ledger) -> str | None:
    """The OS user `handoff slack` must run as to record an approval from Slack: the host
    table's `slack: {os_user: ...}` where the host keeps a table, else the `os_user` the
    ledger's Slack channels name (`notify: [{slack: {channel: ..., os_user: ...}}]`); None: not named."""
    host = host_table.read()
    if host is not None:
        return host.slack_os_user
    return _named_in_ledger(ledger)[0]


def _named_in_ledger(ledger: Ledger) -> tuple[str | None, str | None]:
    """(the OS user the ledger's Slack channels name for `handoff slack`, or why none can be
    taken): a key that is not `channel` or `os_user` (`os-user`: a typo that would name no one),
    or two channels naming different users, is never read as no user named."""
    channels = [n.slack for n in ledger.notify if n.slack is not None]
    for channel in channels:
        for key in channel.__pydantic_extra__ or {}:
            return None, (f"the ledger's Slack channel {channel.channel} has the unknown key {str(key)!r}, so whether it "
                          "names the OS user of `handoff slack` cannot be told: write `os_user: NAME` (or remove the key)")
    named = sorted({c.os_user for c in channels if c.os_user})
    if len(named) > 1:
        return None, (f"the ledger's Slack channels name {' and '.join(named)} as the OS user of `handoff slack`: "
                      "name one, on every channel")
    return (named[0] if named else None), None


def slack_recorder_problem(ledger: Ledger, user: str | None = None, uid: int | None = None) -> str | None:
    """Why an approval from Slack may not be recorded by this process (or one of `uid`), or may
    not stand as recorded by OS user `user`; None: it may. Where the host keeps a table it must
    name the Slack process's OS user: nothing else tells that process from an agent."""
    recorder = slack_recorder(ledger)
    if recorder is None and host_table.path() is None:
        why = _named_in_ledger(ledger)[1]
        if why:
            return why
    if recorder is None:
        if host_table.path() is None:
            return None  # the ledger's own table names none: `check --strict` says what that leaves open
        return (f"the host's approvers table ({host_table.path()}) names no OS user for `handoff slack`, so no approval "
                "from Slack can be told from an agent's: add `slack: {os_user: NAME}` to it, NAME the user `handoff "
                "slack` runs as")
    if user is not None:
        return None if _same(user, recorder) else (
            f"approvals from Slack are recorded by OS user {recorder} (the user `handoff slack` runs as), but this one "
            f"was recorded as {user}")
    why = uid_is(recorder, uid)
    return f"approvals from Slack are recorded by OS user {recorder} only (`handoff slack` runs as it): {why}" if why else None


def kernel_proves(ledger: Ledger, approval: Approval) -> bool:
    """Does a file of `approval.user`'s prove `approval` (engine.approvals.attest)? An
    `os_user` approval, and one from Slack where the Slack process's OS user is named."""
    if approval.via == "slack":
        return slack_recorder(ledger) is not None
    return "os_user" in (approval.verified or "")


def admit_slack(ledger: Ledger, who_name: str, slack: SlackId) -> tuple[str, str]:
    """(approver name, "slack") for an approval from Slack by `slack`, or Refused: the
    ids must be in the `approvers:` table, and name the approver the request is for, and
    this process must be the Slack process's OS user where one is named (slack_recorder)."""
    why = slack_recorder_problem(ledger)
    if why:
        raise Refused(f"{why}; nothing was approved", title="Not the Slack process")
    entry = slack_entry(ledger, slack.team, slack.user)
    if entry is None:
        raise Refused(f"Slack user {slack.ref} is not in this ledger's approvers; a person is mapped by id only: add "
                      f"{{name: NAME, slack: {slack.ref}}} to `approvers:` in the ledger; nothing was approved",
                      title="Not an approver")
    if not _same(entry.name, who_name):
        raise Refused(f"Slack user {slack.ref} is approver {entry.name}, not {who_name}; nothing was approved",
                      title="Not that person")
    return entry.name, "slack"


def admit(ledger: Ledger, who_name: str, who_user: str, signed: Signed | None, expect: dict,
          slack: SlackId | None = None) -> tuple[str, str]:
    """May this person approve now? Returns (the approver's name, how it was verified);
    raises Refused saying why not. `expect`: the payload fields a signature must carry;
    `slack`: the approval comes from Slack, by this Slack identity (admit_slack)."""
    if slack is not None:
        return admit_slack(ledger, who_name, slack)
    approvers = table(ledger)
    if approvers is None:
        return who_name, "none"
    entry = verified_entry(ledger, who_name)
    if entry is None:
        login = next((n for n in plain_names(ledger) if _same(who_user, n)), None)
        if login is not None:
            # A plain name is an OS login: the login is the person, whatever --as says (one login
            # under two names would count as two people under `count`).
            if not _same(who_name, login):
                raise Refused(f"OS user {who_user!r} approves as {login} (a plain OS login in this ledger's approvers), "
                              f"not as {who_name!r}: run it without --as, or make {who_name} a verified approver "
                              f"({{name: {who_name}, os_user: LOGIN}} or ssh_key); nothing was approved",
                              title="Not that person")
            return login, "none"
        names = ", ".join(a if isinstance(a, str) else a.name for a in approvers) or "none"
        raise Refused(f"OS user {who_user!r} is not in this ledger's approvers ({names}), nor is {who_name!r}; "
                      "a verified approver names themselves with --as NAME", title="Not an approver")
    if entry.slack and not (entry.os_user or entry.ssh_key):
        raise Refused(f"approver {entry.name} approves from Slack only (slack: {entry.slack}): use the Review button on "
                      "the request in the ledger's Slack channel (`handoff slack`); nothing was approved",
                      title="Approves from Slack")
    if entry.os_user:
        why = uid_is(entry.os_user)
        if why:
            raise Refused(f"approver {entry.name} must approve as OS user {entry.os_user}: {why}", title="Not that person")
    if entry.ssh_key:
        if signed is None:
            raise Refused(f"approver {entry.name} signs approvals (ssh_key): run `handoff approve` with --key FILE, "
                          "or with SSH_AUTH_SOCK set to an agent holding that key", title="Signature needed")
        why = signature_problem(signed.payload, signed.sig, entry, expect)
        if why:
            raise Refused(f"approver {entry.name}: {why}; nothing was approved", title="Bad signature")
    return entry.name, _local_how(entry)


def signature_problem(text: str | None, sig: str | None, entry: Approver, expect: dict) -> str | None:
    """Why `sig` over `text` is not `entry`'s approval of exactly `expect`, or None."""
    if not text or not sig:
        return "the approval carries no signature"
    fields = sshsig.parse_payload(text)
    if fields is None:
        return "the signed payload is not an approval payload"
    for key, want in expect.items():
        if fields.get(key) != want:
            return f"the signature is over {key} {fields.get(key)!r}, not {want!r}"
    return sshsig.verify(text, sig, entry.ssh_key or "")


def recheck(ledger: Ledger, name: str, approval: Approval) -> str | None:
    """Under the fence: why `approval` no longer stands for a verified approver, or None."""
    if table(ledger) is None:
        return None
    entry = verified_entry(ledger, approval.by)
    if entry is None:
        if _same(approval.by, approval.user) and any(_same(approval.user, n) for n in plain_names(ledger)):
            return None
        return f"{approval.by} (OS user {approval.user}) is not in this ledger's approvers"
    if approval.via == "slack":
        ids = approval.slack or {}
        if approval.verified != "slack" or not entry.slack or entry.slack != f"{ids.get('team')}/{ids.get('user')}":
            return (f"approver {entry.name} approves from Slack as {entry.slack or 'nobody'}, but this approval names "
                    f"Slack user {ids.get('team')}/{ids.get('user')}")
        return slack_recorder_problem(ledger, user=approval.user or "")
    if entry.slack and not (entry.os_user or entry.ssh_key):
        return f"approver {entry.name} approves from Slack only, and this approval was not given there"
    if entry.os_user and not _same(approval.user, entry.os_user):
        return f"approver {entry.name} approves as OS user {entry.os_user}, but this approval ran as {approval.user}"
    if entry.os_user and "os_user" not in (approval.verified or ""):
        return f"approver {entry.name}'s uid was not verified when this approval was given"
    if entry.ssh_key:
        why = signature_problem(approval.signed, approval.sig, entry, expected(ledger, name, approval))
        if why:
            return f"approver {entry.name}: {why}"
    return None


def expected(ledger: Ledger, name: str, approval: Approval) -> dict:
    """The payload fields an approval's signature must carry (all but the revision seen)."""
    return {"ledger": ledger.id, "target": name, "step": approval.step, "hash": approval.hash,
            "checkpoint": approval.checkpoint, "at": approval.at, "approver": approval.by}


def admit_signed(ledger: Ledger, name: str, who_name: str, who_user: str, step: str, digest: str, checkpoint: str | None,
                 signed: Signed | None, slack: SlackId | None = None) -> tuple[str, str, str]:
    """(approver name, how verified, time) for an approval of `step` on `name` (hash
    `digest`) now, or Refused: `admit`, plus a signature's freshness and single use."""
    at = now_iso()
    fields = (sshsig.parse_payload(signed.payload) or {}) if signed else {}
    if signed is not None and ledger.id is None:  # never taken from the signature: any ledger's would do
        raise Refused("this ledger has no `id`, and a signature names the ledger it approves: `handoff approve` gives "
                      "the ledger its id in a write of its own before it signs (check that nothing removes the `id`), "
                      "then sign again; nothing was approved", title="Ledger has no id")
    expect = {"ledger": ledger.id, "target": name, "step": step, "hash": digest, "checkpoint": checkpoint}
    by, verified = admit(ledger, who_name, who_user, signed, expect, slack)
    if signed is None:
        return by, verified, at
    age = (parse_iso(at) or 0) - (parse_iso(fields.get("at")) or 0)
    if not 0 <= age <= SIGNED_FRESH or not isinstance(fields.get("revision"), int) or fields["revision"] > ledger.revision:
        raise Refused(f"the signature was made at {fields.get('at')} for revision {fields.get('revision')}; an approval "
                      f"signature is good for {SIGNED_FRESH:.0f}s and only for a revision already written: sign again",
                      title="Stale signature")
    if any(a.sig == signed.sig for a in ledger.targets[name].approvals):
        raise Refused("this signature was already given for an approval; sign again", title="Signature reused")
    return by, verified, fields["at"]


SIGNED_FRESH = 600.0  # seconds a signature may take from signing to recording: never a replay of an old one
