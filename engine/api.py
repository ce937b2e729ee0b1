"""The engine's public API: what the CLI, the TUI and the session use.

    h = open_ledger("ledger.yaml", actor="alice")
    ledger = h.load()
    h.approve("db-18", comment="lag 1.4s, go")

Every mutation goes through the store's transaction and is journaled with who did it
(the `actor` name and the OS user, always both) and the revision it produced. A
read-only handle refuses every mutation and writes nothing anywhere near the ledger.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urldefrag

from engine.approvals.approvers import SlackId, admit_slack, kernel_proves, slack_entry
from engine.approvals.batch import matching
from engine.approvals.identity import os_user
from engine.approvals.people import agent_caller
from engine.approvals.policy import describe_request
from engine.audit.journal import JournalWriteError
from engine.audit.redact import redact
from engine.audit.time_travel import WHAT as REBUILT_FROM
from engine.audit.time_travel import head_rev
from engine.audit.time_travel import state_at as _state_at
from engine.bundled import demo_dir
from engine.codec.textsafe import one_line, shell_word, visible
from engine.codec.timefmt import age_text, now_iso, parse_time
from engine.errors import (
    ApprovalChanged,
    Conflict,
    HandoffError,
    JournalIncomplete,
    LedgerInvalid,
    LedgerUnreadable,
    NamesItsLedger,
    NoSuchName,
    NoSuchTarget,
    ReadOnly,
    Refused,
    UsageError,
    WriteFailed,
    os_error_text,
)
from engine.host import failpoints
from engine.host.console import hangups_ignored
from engine.host.userstate import advance_user_state, load_user_state, save_user_state
from engine.lease.rules import LeaseState, lease_state
from engine.ledger import ops
from engine.ledger.access import writable_reason
from engine.ledger.drift import DRIFT_HEADING, DRIFT_PREFIX, DRIFT_UNCHECKED, checkpoint_drift, drift_line, drift_said
from engine.ledger.guard import untrusted_text
from engine.ledger.invariants import InvariantStatus, evaluate, journal_readings
from engine.ledger.model import BASE_STATES, SUMMARY_ORDER, Approval, Ledger, SessionLease, Target
from engine.ledger.ops import PendingCommand
from engine.ledger.render import approval_hash
from engine.ledger.workdir import WorkingDir
from engine.settings import seconds as setting_seconds
from engine.store import open_store
from engine.store.base import Snapshot
from engine.store.bulk import started
from engine.store.sidecar import open_sidecar
from engine.version import version

if TYPE_CHECKING:  # `watch()`'s annotation only: status, approve and the TUI's first paint skip asyncio's import
    import asyncio

T = TypeVar("T")
JOURNALED_FIRST = frozenset({"unapproval"})  # record kinds whose `_intent` is journaled before the ledger is written (_change)


def _record_key(record: dict[str, Any]) -> tuple:
    """A change's record as `_change` tells two apart across a transaction's retries."""
    return tuple(sorted((k, str(v)) for k, v in record.items() if k != "msg"))


@dataclass
class LedgerChanged:
    """The ledger on disk changed and parses."""

    ledger: Ledger
    snapshot: Snapshot


@dataclass
class LedgerBroken:
    """The ledger on disk changed and does not parse; the last good state still stands."""

    error: LedgerInvalid


@dataclass(frozen=True)
class TimelinePage:
    """One page of the journal, oldest first: records `start` .. `start + len(records)` of `total`
    (of the records naming `target`, when one is given); `head_rev` is the newest revision recorded."""

    records: list[dict[str, Any]]
    start: int
    total: int
    head_rev: int
    target: str | None = None


# DRIFT_HEADING, DRIFT_PREFIX, checkpoint_drift, drift_line, drift_said and DRIFT_UNCHECKED live in
# engine.ledger.drift (engine.ledger.ops binds an approval to the drift shown) and are
# imported above, for every caller that took them from here.



class LedgerHandle:
    """One ledger, opened by one person (or session)."""

    def __init__(self, location: str, *, actor: str | None = None, read_only: bool = False) -> None:
        self.location = location
        self.path = Path(location)
        self.os_user = os_user()
        self.actor = actor or self.os_user
        self.woke: str | None = None  # what waking a Temporal workflow that holds the ledger said
        self.who = ops.Who(self.actor, self.os_user)
        is_url = location.startswith(("postgresql://", "postgres://"))
        reason = None if (read_only or is_url) else writable_reason(location)
        self.read_only = read_only or reason is not None
        self.read_only_reason = "--read-only" if read_only else reason
        self.store = open_store(location, read_only=self.read_only)
        self.journal = self.store.open_journal(read_only=self.read_only)
        self.ledger_dir = WorkingDir(os.getcwd()) if is_url else ops.ledger_dir(location)
        self.is_url = is_url
        self._snapshot: Snapshot | None = None

    @property
    def display_location(self) -> str:
        """The location as people may see it: a password in a URL is masked."""
        return redact(self.location)

    # -- reading -----------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        snap = self.store.snapshot()
        self._snapshot = snap
        self.journal.set_redact(snap.ledger.redact)
        return snap

    def load(self) -> Ledger:
        """The ledger as it is now (shared object: do not change it; use the methods)."""
        return self.snapshot().ledger

    async def watch(self, stop_event: asyncio.Event | None = None) -> AsyncIterator[LedgerChanged | LedgerBroken]:
        """Changes as they happen (any writer: a session, another operator, vim)."""
        async for event in self.store.watch(stop_event):
            if isinstance(event, LedgerInvalid):
                yield LedgerBroken(event)
            else:
                self._snapshot = event
                yield LedgerChanged(event.ledger, self._snapshot)

    def invariants(self, ledger: Ledger | None = None) -> list[InvariantStatus]:
        """Each invariant's status now; metric values are the session's last readings."""
        return evaluate(ledger or self.load(), journal_readings(self.journal))

    def pending_command(self, ledger: Ledger, target: str, step: str | None = None) -> PendingCommand:
        """What approving `target` (its awaiting step, or `step`) now would approve: its argv,
        checkpoint and hash. Pass the hash back to `approve(expect_hash=...)`."""
        try:
            return ops.pending_command(ledger, target, self.ledger_dir, step)
        except NoSuchName as err:
            raise err.at(self.display_location) from None

    def next_command(self, ledger: Ledger, target: str) -> PendingCommand | None:
        """What would run next on `target`: the awaited step, else the first runbook step from
        where it stands; None when nothing would (done, blocked, failed, no runbook).
        Raises `Refused` when the step's template cannot be rendered for this target."""
        t = ledger.targets[target]
        if t.state == "awaiting_approval":
            return self.pending_command(ledger, target)
        if t.state in ("done", "blocked", "failed"):
            return None
        step = next((s for s in ledger.steps() if s.from_ == ledger.position(target)), None)
        if step is None or not step.run:
            return None
        argv = ops.rendered_command(ledger, target, step, self.ledger_dir)
        return PendingCommand(step, argv, not step.reversible, t.checkpoint,
                              approval_hash(target, t, step, ledger_dir=self.ledger_dir))

    def session_state(self, ledger: Ledger | None = None) -> LeaseState:
        """Who holds the lease, and whether they are live (engine.lease.rules's rules)."""
        ledger = ledger or self.load()
        state = lease_state(ledger.session, self.store.heartbeat().current())
        if ledger.session is not None and ledger.session.runtime == "temporal":
            from engine.temporal import check_ended  # a late beat asks the server whether the workflow ended

            state = check_ended(ledger.session, state)
        return state

    def until_progress(self, ledger: Ledger, target: str) -> dict[str, Any] | None:
        """The newest reading of the `until` step running on `target` ({value, until, at,
        elapsed, deadline, text}), or None (engine.session.until_progress)."""
        from engine.session.until_progress import latest

        return latest(self.journal, ledger, target)

    def history(self, target: str, limit: int = 200) -> list[dict[str, Any]]:
        return self.journal.for_target(target, limit)

    def timeline(self, start: int | None = None, size: int = 100, target: str | None = None) -> TimelinePage:
        """A page of `size` journal records from index `start` (None: the newest page), of the
        whole journal or of `target`'s records. Reads the journal once per page (time linear in
        its length); only the page is kept. Read-only."""
        records, _ = self.journal.read(0)
        top = head_rev(records)
        if target is not None:
            records = [r for r in records if r.get("target") == target]
        total, size = len(records), max(1, size)
        first = max(0, total - size) if start is None else max(0, min(start, max(0, total - size)))
        return TimelinePage(records[first:first + size], first, total, top, target)

    def state_at(self, rev: int) -> dict[str, dict[str, Any]]:
        """Every target as the journal says it was at revision `rev` (`handoff show --at`'s
        rebuild: engine.audit.time_travel; a state never recorded says so). Read-only."""
        records, _ = self.journal.read(0)
        retry_to = {s.name: s.from_ for s in self.load().steps()}
        return {name: then.as_dict() for name, then in _state_at(records, rev, retry_to).items()}

    def journal_breaks(self) -> list[str]:
        """Where the journal's hash chain breaks, one line each (empty: intact), with the
        history journal beside it (a journal erased or cut short with its index and the
        last-write record): what `handoff check` says. Reads the whole journal: for a banner
        checked now and then, not on every refresh."""
        from engine.checks import chain

        return [b.text() for b in chain.one_verdict(self).breaks]

    # -- changing ----------------------------------------------------------------

    def _change(self, fn: Callable[[Ledger], tuple[T, list[dict[str, Any]]]], *, accept_shrink: bool = False,
                accept_rollback: bool = False) -> T:
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); nothing was changed")
        self.journal.check_writable()  # an unusable journal is refused before the ledger changes
        holder: list[SessionLease | None] = []
        first: dict[tuple, dict[str, Any]] = {}  # intents journaled before the write (once, whatever the retries)

        def change(ledger: Ledger):
            result, records = fn(ledger)
            holder[:] = [ledger.session]
            # A withdrawal's intent is journaled before the approval leaves the file: a kill -9
            # after the write must not leave an approval gone from the file with nothing saying it
            # was withdrawn (copied back, it would still authorise: engine.approvals.witness). The
            # record itself follows the write, with its revision, as every change's does.
            for record in records:
                if record["kind"] in JOURNALED_FIRST and _record_key(record) not in first:
                    failpoints.reached("before-first-records")  # tests: inside the transaction, the ledger not yet written
                    try:
                        first[_record_key(record)] = self._journal_record(
                            {**record, "kind": record["kind"] + "_intent", "msg": "about to write: " + record["msg"]}, None)
                    except JournalWriteError as err:
                        raise JournalWriteError(f"{err.message}; a withdrawal is journaled before the ledger changes, so "
                                                "nothing was changed: try again", reason=err.reason) from None
            return result, records

        try:
            (result, records), revision = self.store.transact(change, accept_shrink=accept_shrink, accept_rollback=accept_rollback)
        except BaseException as err:
            if isinstance(err, NamesItsLedger):
                err.at(self.display_location)  # the operation knew the ledger, not where it is
            if isinstance(err, HandoffError) and self.store.unsettled:
                raise self._unsettled(err, bool(first)) from None  # it may be in: no intent is cancelled
            self._cancel(first.values())  # refused, failed or interrupted: nothing was withdrawn
            raise
        self._cancel(intent for key, intent in first.items() if key not in {_record_key(r) for r in records})
        failpoints.reached("before-journal-records")  # tests: the change is on disk, its records not yet
        # The ledger is written first: the journal never records a change a retry then drops.
        try:
            if self.store.saw_external_edit and not self.store.journaled_external_edit:
                self.journal.append(
                    "external_edit",
                    f"the ledger was edited outside the engine before revision {revision}; the change was applied on top of that edit",
                    actor=self.actor,
                    rev=revision,
                )
            for record in records:
                self._journal_record(record, revision)
        except JournalWriteError as err:
            raise JournalIncomplete(f"recorded in the ledger (revision {revision}) but NOT in the journal: {err.reason}; "
                                    "the next journal record notes the gap" + self._unwitnessed(records)) from None
        if self.store.history_lost:  # a file ledger's history journal (PostgreSQL's commits with the ledger)
            raise JournalIncomplete(f"recorded in the ledger (revision {revision}) but NOT in its history journal: "
                                    f"{self.store.history_lost}; "
                                    f"`handoff show --at {revision}` cannot rebuild it, and the next write keeps the whole "
                                    "ledger there again")
        self._mark_withdrawn([r for r in records if r["kind"] == "unapproval"], revision)
        lease = holder[0] if holder else None
        if lease is not None and lease.runtime in ("temporal", "langgraph"):
            state = lease_state(lease, self.store.heartbeat().current())  # a dead runtime, or no worker: said
            if lease.runtime == "temporal":
                from engine.temporal import wake_workflow  # temporalio itself only if the SDK is installed

                self.woke = wake_workflow(lease, state, ledger=self.location)
            else:
                from engine.langgraph import wake_hint  # no langgraph import: the runtime watches the ledger

                self.woke = wake_hint(lease, state)
        return result

    def _mark_withdrawn(self, records: list[dict[str, Any]], revision: int) -> None:
        """Each approval these `unapproval` records take back gets the mark, owned by this process's
        user, that it was withdrawn (engine.approvals.spent_marks): copied back into the ledger, it
        authorises nothing for anyone, whatever the journal beside it says."""
        from engine.approvals.spent_marks import WITHDRAWN

        proofs = self.journal.proofs()
        if proofs is None:
            return
        for record in records:
            taken = Approval(by=record["approval_by"], user="", at=record["approval_at"], step=record["step"],
                             hash=record["hash"])
            try:
                proofs.spend(record["target"], taken, f"{WITHDRAWN}:{revision}", self.os_user)
            except (OSError, HandoffError) as err:
                raise WriteFailed(f"{record['target']}: the approval of {taken.step} by {taken.by} is withdrawn in the "
                                  f"ledger (revision {revision}) and the journal, but the mark that says so beside it "
                                  f"could not be made ({getattr(err, 'strerror', None) or err}): another user's session "
                                  "may not see it") from None

    def _journal_record(self, record: dict[str, Any], revision: int | None) -> dict[str, Any]:
        record = dict(record)
        kind, msg, target = record.pop("kind"), record.pop("msg"), record.pop("target", None)
        # An operation may name the user itself (approve does); the OS user is the same.
        record.setdefault("user", self.os_user)
        return self.journal.append(kind, msg, actor=self.actor, rev=revision, target=target, **record)

    def _cancel(self, intents: Iterable[dict[str, Any]]) -> None:
        """An intent journaled before a write that did not happen (or no longer holds it) is
        cancelled, naming it: the approval it named is not withdrawn. If even that cannot be
        written, the approval stays withdrawn, the safe side: a person approves again."""
        for intent in intents:
            try:
                self.journal.append("intent_cancelled", f"{intent.get('target')}: not done after all: {intent.get('msg')}",
                                    actor=self.actor, target=intent.get("target"), cancels=intent.get("seq"))
            except JournalWriteError:
                pass

    def _unsettled(self, err: HandoffError, withdrawal: bool) -> HandoffError:
        """`err` of a write whose COMMIT was sent and whether the server applied it cannot be told
        (engine.store.postgres `_settle`: one it could tell is done or undone, and said so), saying
        what stands meanwhile. A withdrawal's intent stays in the journal: the approval it names
        authorises nothing, whatever the ledger holds (engine.approvals.witness), the safe side."""
        where = shlex.quote(self.display_location)
        then = ("the withdrawal's intent stays in the journal, so the approvals it names authorise nothing: approve "
                "again if they are still wanted" if withdrawal else
                "if it is in, its journal record is not (an approval without one authorises nothing)")
        err.message = (f"{err.message}; {self.store.unsettled}: {then}. Look with `handoff show {where}` "
                       "before you try again")
        err.args = (err.message,)
        return err

    def _unwitnessed(self, records: list[dict[str, Any]]) -> str:
        """What to do about approvals among `records` that have no journal record: they never
        authorise a run (engine.approvals.witness), so they must be given again."""
        targets = sorted({str(r.get("target")) for r in records if r.get("kind") == "approval"})
        if not targets:
            return ""
        where = shlex.quote(self.display_location)
        return (". An approval with no journal record never authorises a run: once the journal is free, withdraw it "
                "and approve again (" + "; ".join(f"handoff unapprove {where} {shlex.quote(t)}, then handoff approve "
                                                  f"{where} {shlex.quote(t)}" for t in targets) + ")")

    def refuse_agent(self, command: str, target: str | None = None, flag: str | None = None) -> None:
        """Refuse a people-only operation (engine.approvals.people) when this process runs for an
        agent: one `people_only_refused` journal record, the ledger untouched (exit 1)."""
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); nothing was changed")
        from engine.approvals.refusal import refuse_if_agent

        refuse_if_agent(self.journal, command, flag=flag, target=target, ledger=self.display_location, actor=self.actor,
                        user=self.os_user, rev=self._snapshot.ledger.revision if self._snapshot else None)

    def give_id(self, purpose: str, new: str) -> str:
        """The ledger's `id`: `new` (a UUID) written in a write of its own (journaled as
        `ledger_id`, saying `purpose`) when it has none yet; an id once written is kept."""
        from engine.store.transact import NoChange

        def give(ledger: Ledger):
            if ledger.id:
                raise NoChange(ledger.id)
            ledger.id = new
            return ledger.id, [{"kind": "ledger_id", "msg": f"ledger id {ledger.id} written: {purpose}"}]

        try:
            return self._change(give)
        except NoChange as kept:
            return kept.value

    def approve(self, target: str, *, step: str | None = None, comment: str | None = None,
                expect_hash: str | None = None, key: str | None = None, slack: SlackId | None = None,
                expect_revision: int | None = None, expect_drift: Any = DRIFT_UNCHECKED) -> Approval:
        """Approve `target`'s irreversible step. With `expect_hash` (what the approver was
        shown), a changed command or checkpoint raises ApprovalChanged and records nothing;
        with `expect_revision` too, so does any write to the ledger since; with `expect_drift`
        (the checkpoint drift the approver was shown: None for none, else its text, as
        `checkpoint_drift` gives it), so does a drift recorded, changed or reconciled since.
        An approver with an `ssh_key` signs with `key` (a key file) or the ssh-agent at
        SSH_AUTH_SOCK (engine.approvals.signing). `slack`: the approval comes from Slack
        (engine.slack), by this identity, which must map to `actor` in `approvers:`."""
        self.refuse_agent("approve", target)
        from engine.approvals.policy import requesters
        from engine.approvals.signing import sign_approval

        signed = None if slack is not None else sign_approval(self, target, step, key)

        proved: list[bool] = []  # does a proof of the recording user's back it (the transaction's last try says)

        def change(ledger: Ledger):
            if expect_revision is not None and ledger.revision != expect_revision:
                raise ApprovalChanged(f"{target}: the ledger changed since you looked (revision {expect_revision}, now "
                                      f"{ledger.revision}); nothing was approved: look again", seen=expect_hash or "", now=None)
            done = ops.approve(ledger, target, self.who, step=step, comment=comment, ledger_dir=self.ledger_dir,
                               expect_hash=expect_hash, signed=signed, slack=slack, expect_drift=expect_drift,
                               where=self.display_location, requested_by=requesters(self.journal, ledger, target) if target in ledger.targets else None)
            proved[:] = [kernel_proves(ledger, done[0])]
            return done

        approval = self._change(change)
        proofs = self.journal.proofs()
        if proved[-1] and proofs is not None:
            try:
                proofs.record(target, approval)
            except (OSError, HandoffError) as err:
                why = os_error_text(err) if isinstance(err, OSError) else err.message
                raise WriteFailed(
                    f"{target}: the approval of {approval.step} is in the ledger, but the proof that {approval.user} "
                    f"recorded it could not be made ({why}), so it will not authorise a run: "
                    f"{proofs.where(approval.user)}, then run `handoff unapprove` and approve again") from None
        return approval

    def slack_approver(self, ledger: Ledger, target: str, slack: SlackId) -> str:
        """The approver `slack` maps to (`approvers:`, by id), when they may approve what
        `target` awaits: else Refused (not mapped, or the requester). engine.slack asks
        this before it compares the hash, as its order says; `approve` asks it all again
        under the lock."""
        from engine.approvals.policy import requesters

        entry = slack_entry(ledger, slack.team, slack.user)
        name, _ = admit_slack(ledger, entry.name if entry else "", slack)
        t = ledger.targets.get(target)
        step = ledger.step(t.awaiting) if t is not None and t.awaiting else None
        if step is not None:
            ops.requester_rule(ledger, target, step, ops.Who(name, self.os_user), name, requesters(self.journal, ledger, target))
        return name

    def select_batch(self, ledger: Ledger, pattern: str, step: str):
        """What `approve_batch` would approve for `--targets pattern` (engine.approvals.batch.Selection):
        a target this person asked for is left out, saying so, as its single approval would be refused."""
        from engine.approvals.approvers import admit
        from engine.approvals.batch import select
        from engine.approvals.policy import requesters

        try:  # as an unsigned approval admits this person: who they approve as, and how that is verified
            by, verified = admit(ledger, self.who.name, self.who.user, None, {})
        except Refused:
            by, verified = self.who.name, None  # a signature is needed: `approve_batch` checks the rest

        def refusal(name: str, the_step) -> str | None:
            try:
                ops.requester_rule(ledger, name, the_step, self.who, by, requesters(self.journal, ledger, name), verified=verified)
            except Refused as err:
                return err.message
            return None

        try:
            return select(ledger, pattern, step, self.ledger_dir, self.actor, refusal)
        except NoSuchName as err:
            raise err.at(self.display_location) from None

    def approve_batch(self, expect: dict[str, str], *, step: str, comment: str | None = None,
                      key: str | None = None, expect_drift: dict[str, str | None] | None = None) -> list[Approval]:
        """Approve `step` on each target of `expect` (name -> the hash the approver was
        shown): one approval and one journal record per target, each checked as
        `approve` checks one; any refused target refuses the whole batch (nothing recorded).
        The hashes are the binding (the command and checkpoint each approver saw), as in the
        TUI's batch dialog and `handoff approve --targets`: a write elsewhere in the ledger
        does not refuse it. `expect_drift` (name -> the checkpoint drift shown for it, None
        for none; a target left out had none shown) binds each target's drift too."""
        self.refuse_agent("approve", ", ".join(expect))
        from engine.approvals.batch import approve_all
        from engine.approvals.policy import requesters
        from engine.approvals.signing import sign_approval

        signed = {name: sign_approval(self, name, step, key) for name in expect}

        def change(ledger: Ledger):
            asked = {n: requesters(self.journal, ledger, n) for n in expect if n in ledger.targets}
            return approve_all(ledger, expect, self.who, step=step, comment=comment, ledger_dir=self.ledger_dir,
                               signed=signed, requested_by=asked, expect_drift=expect_drift, where=self.display_location)

        return self._change(change)

    def unapprove(self, target: str, *, step: str | None = None) -> str:
        """Withdraw `target`'s unused approvals (of `step` only, when given); returns the step(s) withdrawn."""
        self.refuse_agent("unapprove", target)

        def change(ledger: Ledger):
            records = ops.unapprove(ledger, target, self.who, step=step)
            return ", ".join(dict.fromkeys(r["step"] for r in records)), records

        withdrawn = self._change(change)
        # Every approval of the step given until now, whatever the ledger said each was: the copy a
        # person withdrew may have been changed first (engine.approvals.spent_marks.withdraw_until).
        proofs = self.journal.proofs()
        if proofs is not None:
            try:
                proofs.withdraw_until(target, step or "*", now_iso())
            except (OSError, HandoffError) as err:
                raise WriteFailed(f"{target}: the approvals are withdrawn in the ledger and the journal, but the mark "
                                  f"that says so beside it could not be made ({getattr(err, 'strerror', None) or err}): "
                                  "another user's session may not see it") from None
        return withdrawn

    def reject(self, target: str, reason: str, *, slack: SlackId | None = None, step: str | None = None,
               expect_hash: str | None = None, expect_revision: int | None = None) -> None:
        """Say no to `target`'s awaiting step; `slack`: from Slack by this identity, which
        must map to `actor` in `approvers:` (the journal record says `via: slack`). Bound, as
        `approve` is, to what the person was shown: `step` awaited, `expect_hash` (its command
        and checkpoint), `expect_revision` (no write since); else ApprovalChanged, nothing recorded."""
        self.refuse_agent("reject", target)

        def change(ledger: Ledger):
            if slack is not None:
                admit_slack(ledger, self.actor, slack)
            if expect_revision is not None and ledger.revision != expect_revision:
                raise ApprovalChanged(f"{target}: the ledger changed since you looked (revision {expect_revision}, now "
                                      f"{ledger.revision}); nothing was rejected: look again", seen=expect_hash or "", now=None)
            records = ops.reject(ledger, target, self.who, reason, step=step, expect_hash=expect_hash,
                                 ledger_dir=self.ledger_dir)
            if slack is not None:
                records[0].update(via="slack", slack=slack.record())
            return None, records

        self._change(change)

    def set_note(self, text: str, *, base: str | None = None) -> list[str]:
        """Store a person's handoff note exactly as written; returns what the deterministic
        review (engine.audit.review) finds in it, which is also journaled, never added to it."""
        from engine.audit.review import review

        def fn(ledger: Ledger):
            problems = review(text, ledger, previous=ledger.handoff_note, since=ledger.handoff_note_at)
            records = ops.set_note(ledger, self.who, text, base=base, by_agent=agent_caller() is not None)
            if problems:  # on the note's own record: one journal record per write
                records[0]["msg"] += f"; the reviewer found {len(problems)} problem(s): " + "; ".join(problems)
                records[0]["review"] = problems
            return problems, records

        return self._change(fn)

    def ack_note(self) -> None:
        """The incoming operator read the note (journal only; the ledger is not rewritten)."""
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); nothing was changed")
        ledger = self.load()
        self.journal.append("note_ack", f"handoff note acknowledged by {self.who}", actor=self.actor, rev=ledger.revision, user=self.os_user)

    def pause(self, reason: str) -> None:
        self._change(lambda ledger: (None, ops.pause(ledger, self.who, reason)))

    def unpause(self) -> None:
        self.refuse_agent("unpause")
        self._change(lambda ledger: (None, ops.unpause(ledger, self.who)))

    def retry(self, target: str, *, force: bool = False, reason: str | None = None) -> None:
        if force:  # only a failed irreversible step needs --force: retrying it is for people
            self.refuse_agent("retry", target, flag="--force")
        self._change(lambda ledger: (None, ops.retry(ledger, target, self.who, force=force, reason=reason)))

    def block(self, target: str, reason: str) -> None:
        self._change(lambda ledger: (None, ops.block(ledger, target, self.who, reason)))

    def unblock(self, target: str, to: str, reason: str) -> None:
        self.refuse_agent("unblock", target)
        self._change(lambda ledger: (None, ops.unblock(ledger, target, self.who, to, reason)))

    def request_stop(self) -> None:
        self._change(lambda ledger: (None, ops.request_stop(ledger, self.who)))

    def accept_removal(self) -> int:
        """Record that targets missing from the file were removed on purpose."""
        return self.accept(removal=True)

    def accept_rollback(self) -> int:
        """Record that the file going back in time (a lower revision, a lost step, metric
        or budget) is meant; the next engine write gets a revision above every earlier one."""
        return self.accept(rollback=True)

    def accept(self, *, removal: bool = False, rollback: bool = False) -> int:
        """Accept what the file lost since the engine last wrote it; returns the new revision."""
        for flag, on in (("--accept-removal", removal), ("--accept-rollback", rollback)):
            if on:
                self.refuse_agent("check", flag=flag)
        snap = self.store.snapshot()
        records = []
        if removal:
            gone = ", ".join(snap.missing) or "none"
            records.append({"kind": "removal_accepted", "msg": f"target removal accepted by {self.who}; "
                                                                f"{len(snap.ledger.targets)} targets remain (gone: {gone})"})
        if rollback:
            what = "; ".join(snap.rollback) or "nothing had gone back"
            records.append({"kind": "rollback_accepted", "msg": f"rollback accepted by {self.who}: {what}"})
        return self._change(lambda ledger: (ledger.revision, records), accept_shrink=removal, accept_rollback=rollback)

    def start_session(self, args: list[str] | None = None) -> int:
        """Start `handoff resume` as its own detached process (own session and process
        group), so closing the TUI or losing SSH never kills a step midway."""
        if self.read_only:
            raise ReadOnly(f"read-only ({self.read_only_reason}); no session was started")
        log = os.fdopen(open_sidecar(session_log_path(self.location), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                     ledger=self.location if not self.is_url else ""), "ab")
        try:
            proc = subprocess.Popen(
                # -P: run in the ledger's folder, `-m` would import an `engine/` left there first, as this person.
                [sys.executable, "-P", "-m", "engine.cli.main", "resume", "--ledger", str(self.location), "--as", self.actor,
                 *(args or [])],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                cwd=self.ledger_dir,
            )
        finally:
            log.close()
        return proc.pid


def session_log_path(location: str) -> str:
    """Where a session started from the TUI writes its output: beside a file ledger; for a
    database ledger (no folder of its own), in the per-user state folder."""
    if not location.startswith(("postgresql://", "postgres://")):
        return os.path.realpath(location) + ".session.log"
    from engine.host.folders import state_dir

    folder = state_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    name = urldefrag(location)[1] or "default"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "ledger"
    return os.path.join(folder, f"postgres-{safe}.session.log")


def open_ledger(location: str, *, actor: str | None = None, read_only: bool = False) -> LedgerHandle:
    """Open a ledger and read it once; raises LedgerInvalid (file:line:col) if it is bad."""
    handle = LedgerHandle(location, actor=actor, read_only=read_only)
    handle.load()
    return handle


__all__ = [
    "demo_dir", "describe_request", "ApprovalChanged", "BASE_STATES", "Conflict", "DRIFT_HEADING", "DRIFT_PREFIX", "DRIFT_UNCHECKED", "checkpoint_drift", "drift_line", "drift_said", "HandoffError", "InvariantStatus", "Ledger", "LedgerBroken",
    "LedgerChanged", "LedgerHandle", "LedgerInvalid", "LedgerUnreadable", "NoSuchTarget", "PendingCommand", "ReadOnly", "Refused", "SUMMARY_ORDER",
    "REBUILT_FROM", "SlackId", "Snapshot", "Target", "TimelinePage", "UsageError", "slack_entry", "age_text", "load_user_state", "matching",
    "hangups_ignored", "one_line", "open_ledger", "save_user_state", "advance_user_state", "setting_seconds",
    "parse_time", "redact", "shell_word", "started", "untrusted_text", "version", "visible",
]
