"""The ledger commands of `handoff`: check, status, approve, unapprove, reject, note,
pause, unpause, retry, block, unblock, journal, schema.

Each `help=` is what an on-call engineer reads in `handoff --help`: what the command
does for them, not how it works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from engine.cli.arguments import open_handle
from engine.codec.jsontext import json_line
from engine.errors import HandoffError, UsageError, os_error_text


def add_who(parser) -> None:
    parser.add_argument("--as", dest="actor", metavar="NAME",
                        help="your name in the journal (default: the login user, which is always recorded too)")


def add_ledger(parser) -> None:
    parser.add_argument("ledger", help="the ledger file (or its postgresql://host/db#name location)")


def add_target(parser) -> None:
    parser.add_argument("target", help="the target's name as the ledger spells it (db-18)")


def register(sub) -> None:
    p = sub.add_parser("check", help="find what would stop or stall a session, before it runs (exit 0 fine, 1 problems, 2 unreadable)")
    p.add_argument("ledger", nargs="?", help="the ledger file (or its postgresql:// location); optional with --explain")
    p.add_argument("--strict", action="store_true", help="warnings are problems too (for CI): no runbook, nobody paged, template placeholders, unused steps")
    p.add_argument("--json", action="store_true", help="one JSON object: ok, problems, unenforced, invariants, findings (file, line, column, suggestion)")
    p.add_argument("--explain", action="store_true", help="print every invariant form the engine understands (and how this ledger's read)")
    p.add_argument("--live", action="store_true", help="also read each metric an invariant names, now (runs its command once); without it check reads no metric")
    p.add_argument("--accept-removal", action="store_true", help="record that targets missing from the file were removed on purpose")
    p.add_argument("--accept-rollback", action="store_true",
                   help="record that the file going back in time (lower revision, lost step, metric or budget) is meant")
    add_who(p)
    p.set_defaults(handler=cmd_check)

    p = sub.add_parser("status", help="the shift summary: counts per state, who waits for approval, invariants, the handoff note")
    add_ledger(p)
    p.add_argument("--json", action="store_true", help="the same as one JSON object, for scripts")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("approve", help="approve the irreversible step a target waits on: exactly the command shown, once")
    add_ledger(p)
    p.add_argument("target", nargs="?", help="the target's name as the ledger spells it (db-18); or --targets")
    p.add_argument("--targets", metavar="PATTERN", help="approve --step on every target matching PATTERN ('prod-*', or a comma list): "
                                                       "each command and hash shown, one approval per target")
    p.add_argument("--step", help="approve this step ahead of time (default: the one the target waits on)")
    p.add_argument("--comment", help="why it is safe now (\"lag 1.4s, go\"); goes to the journal")
    p.add_argument("--expect-hash", metavar="H", help="approve only if the command still has this hash (`status --json` shows it)")
    p.add_argument("--yes", action="store_true", help="approve without typing the target's name (or the step and count of a batch); also approves a drifted target anyway")
    p.add_argument("--key", metavar="FILE", help="sign the approval with this ssh key (approvers with ssh_key; default: SSH_AUTH_SOCK's agent)")
    add_who(p)
    p.set_defaults(handler=lambda a: _approve(a))

    p = sub.add_parser("unapprove", help="take back an approval that no session has used yet")
    add_ledger(p)
    add_target(p)
    add_who(p)
    p.add_argument("--step", metavar="STEP", help="withdraw only the approval of this step (default: every unused one)")
    p.set_defaults(handler=_unapprove)

    p = sub.add_parser("reject", help="say no to the step a target waits on; the target is blocked with your reason")
    add_ledger(p)
    add_target(p)
    p.add_argument("--reason", required=True, help="why not (the next shift reads it)")
    p.add_argument("--expect-hash", metavar="H", help="reject only if the command still has this hash (`status --json` shows it)")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.reject(a.target, _reason(a.reason), expect_hash=a.expect_hash),
                                             f"{a.target} rejected and blocked"))

    p = sub.add_parser("note", help="read the handoff note, or write it for the next shift (--set, --edit)")
    add_ledger(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--set", dest="text", metavar="TEXT", help="the new note (`-` reads it from stdin)")
    group.add_argument("--edit", action="store_true", help="edit it in $EDITOR (refused if someone changed it meanwhile)")
    group.add_argument("--previous", action="store_true", help="print the note the current one replaced")
    p.add_argument("--json", action="store_true", help="reading: one JSON object, {note, by, at} (null when there is none)")
    add_who(p)
    p.set_defaults(handler=cmd_note)

    p = sub.add_parser("pause", help="stop sessions from starting steps (running ones finish); for incidents")
    add_ledger(p)
    p.add_argument("--reason", required=True, help="why (shown to everyone who opens the ledger)")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.pause(_reason(a.reason)), "ledger paused"))

    p = sub.add_parser("unpause", help="lift a pause: sessions may start steps again")
    add_ledger(p)
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.unpause(), "ledger unpaused"))

    p = sub.add_parser("retry", help="after fixing the cause: send a failed target back to where its failed step started")
    add_ledger(p)
    add_target(p)
    p.add_argument("--force", action="store_true", help="also after a failed irreversible step, once you checked the real system (needs --reason)")
    p.add_argument("--reason", help="why it is safe to try again (goes to the journal)")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.retry(a.target, force=a.force, reason=a.reason), f"{a.target} queued for a retry"))

    p = sub.add_parser("block", help="take a target out of the work until a person says otherwise")
    add_ledger(p)
    add_target(p)
    p.add_argument("--reason", required=True, help="why, and what it waits for (ticket, team)")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.block(a.target, _reason(a.reason)), f"{a.target} blocked"))

    p = sub.add_parser("unblock", help="put a blocked or failed target back in the work, in the state it really is")
    add_ledger(p)
    add_target(p)
    p.add_argument("--to", required=True, metavar="STATE", help="the state it is really in (queued to start over)")
    p.add_argument("--reason", required=True, help="what changed (goes to the journal)")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.unblock(a.target, a.to, _reason(a.reason)), f"{a.target} is now {a.to}"))

    p = sub.add_parser("journal", help="the audit trail: every step, approval, page and note, with who and when")
    add_ledger(p)
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new records")
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    p.add_argument("--verify", action="store_true",
                   help="check the journal's hash chain and say where it breaks (exit 1 on a break)")
    p.set_defaults(handler=cmd_journal)

    p = sub.add_parser("schema", help="print the ledger's JSON Schema, so editors flag mistakes as you type")
    p.set_defaults(handler=cmd_schema)


def _reason(text: str) -> str:
    if not text or not text.strip():
        raise UsageError("--reason must say why (it goes to the journal)")
    return text.strip()


def _simple(args, action, done: str) -> int:
    from engine.codec.textsafe import visible

    handle = open_handle(args)
    action(handle)
    print(visible(done))
    return 0


def _unapprove(args) -> int:
    """Withdraw, then name what was withdrawn and what approvals the target still holds."""
    from engine.codec.textsafe import visible

    handle = open_handle(args)
    steps = handle.unapprove(args.target, step=args.step)
    left = sorted({a.step for a in handle.load().targets[args.target].approvals if not a.used_at})
    kept = f"; still approved: {', '.join(left)}" if left else ""
    print(visible(f"approval of {steps} on {args.target} withdrawn{kept}"))
    return 0


def _approve(args) -> int:
    if args.targets is not None:  # several at once: engine.cli.approve_batch
        from engine.cli.approve_batch import cmd_approve_batch

        return cmd_approve_batch(args)
    from engine.cli.approve_cmd import cmd_approve

    return cmd_approve(args)


# -- status ----------------------------------------------------------------------


def summary_line(counts: dict[str, int]) -> str:
    """`17 done, 1 replicating, 20 queued, 1 blocked, 1 failed` (the article's words)."""
    return ", ".join(f"{n} {state}" for state, n in counts.items()) or "no targets"


def status_data(handle, ledger) -> dict[str, Any]:
    """The JSON shape of `handoff status --json`."""
    from engine.ledger.stall import hold
    from engine.ledger.touched import touched

    awaiting = []
    for name, t in ledger.targets.items():
        if t.state != "awaiting_approval":
            continue
        item: dict[str, Any] = {"target": name, "step": t.awaiting, "by": t.awaiting_by, "since": t.awaiting_since}
        try:
            pending = handle.pending_command(ledger, name)
            item.update(argv=pending.argv, checkpoint=pending.checkpoint, hash=pending.hash)
        except HandoffError as err:  # a runbook that cannot render it: say why instead
            item.update(argv=None, checkpoint=t.checkpoint, hash=None, problem=err.message)
        from engine.approvals.policy import describe_request

        policy = describe_request(ledger, name, handle.ledger_dir, handle.journal)  # "1 of 2 approvals (alice); expires after 24h"
        if policy:
            item["policy"] = policy
        awaiting.append(item)
    return {
        "task": ledger.task,
        "revision": ledger.revision,
        "counts": ledger.counts(),
        # One serializer call for every target (pydantic-core walks them all): 10,000 calls of
        # Target.model_dump cost a quarter more.
        "targets": ledger.model_dump(mode="json", by_alias=True, include={"targets"})["targets"],
        "awaiting": awaiting,
        "touched": len(touched(ledger)),
        "held": held.as_dict() if (held := hold(ledger)) else None,  # engine.ledger.stall: the invariant that holds the fleet
        "progress": [p for n, t in ledger.targets.items() if t.in_flight is not None and (p := handle.until_progress(ledger, n))],
        "invariants": [{"text": s.text, "status": s.status, "value": s.value, "stale": s.stale} for s in handle.invariants(ledger)],
        "handoff_note": ledger.handoff_note,
        "previous_note": ledger.previous_note.model_dump(mode="json") if ledger.previous_note else None,
        "paused": ledger.paused.model_dump(mode="json") if ledger.paused else None,
        "session": session_figures(handle, ledger),
    }


def session_figures(handle, ledger) -> dict[str, Any] | None:
    """The session holding the lease: its planner, model tokens used of its budget and its
    spend, from what it journaled (its start and its last per-turn usage); None if none."""
    lease = ledger.session
    if lease is None:
        return None
    start = handle.journal.last_of("session_start", session=lease.id) or {}
    usage = handle.journal.last_of("planner_usage", session=lease.id) or {}
    state = handle.session_state(ledger)  # a Temporal workflow that ended says so here (engine.temporal.check_ended)
    return {
        "id": lease.id,
        "status": state.status,
        "detail": state.detail,
        "planner": lease.planner,
        "model": start.get("model"),
        "tokens_used": usage.get("tokens_used", 0),
        "tokens_budget": usage.get("tokens_budget", start.get("tokens_budget")),
        "cost_usd": usage.get("cost_usd_total") if usage else 0.0,
    }


def cmd_status(args) -> int:
    handle = open_handle(args, read_only=True)
    snap = handle.snapshot()
    ledger = snap.ledger
    data = status_data(handle, ledger)
    redactor = handle.journal.redactor  # the default shapes and the ledger's own patterns
    if args.json:
        from engine.cli.needs import needs_a_person
        from engine.version import version

        data = {"version": version(), **data, "needs_person": needs_a_person(ledger)}  # version: which handoff wrote this
        from engine.codec.jsontext import dumps, escaped

        # One write: json.dump to a stream makes one write call per token (~700k at 10k targets).
        safe = redactor.document(data)  # a secret written in by hand is not shown either
        sys.stdout.write(escaped(dumps(safe)) + "\n")
        return 0
    from engine.codec.textsafe import one_line
    from engine.ledger.guard import untrusted_text
    from engine.ledger.render import describe

    out = [f"{ledger.task} (revision {ledger.revision}" + (f", owner {ledger.owner_shift}" if ledger.owner_shift else "") + ")"]
    if ledger.environment:
        out.append(f"environment: {ledger.environment}")
    out.append(f"loaded ledger: {summary_line(data['counts'])}")
    if ledger.paused:
        out.append(f"PAUSED by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}")
    for warning in snap.warnings:
        out.append(f"WARNING: {warning}")
    for name, t in ledger.targets.items():
        if t.changed_outside:  # engine.store.outside: a session stops on it until reconciled
            out.append(f"CHANGED OUTSIDE THE ENGINE: {untrusted_text(name, t, handle.display_location)}")
    for item in data["awaiting"]:
        out.append(f"awaiting approval: {item['target']} {item['step'] or ''} (asked by {item['by'] or '?'} since {item['since'] or '?'})"
                   + (f": {item['policy']}" if item.get("policy") else ""))
        if item.get("argv"):  # what an approval would bind, every character visible (`one_line`, below)
            out.append(f"  would run: {describe(item['argv'])}")
    from engine.cli.needs import lines, needs_a_person

    out.extend(lines(needs_a_person(ledger)))
    out.extend(f"running: {item['text']}" for item in data["progress"])  # `until` steps' newest readings
    out.append(f"touched: {data['touched']}")
    if data["held"]:
        out.append(f"HELD: {data['held']['text']}")
    for inv in data["invariants"]:
        status = f"{inv['status']} (stale)" if inv.get("stale") else inv["status"]
        out.append(f"invariant {status:<10} {inv['text']}  [{inv['value']}]")
    state = handle.session_state(ledger)
    out.append(f"session: {state.status}" + (f" - {state.detail}" if state.detail else ""))
    figures = data["session"]
    if figures and figures["planner"] and figures["planner"] != "autopilot":
        of = f" of {figures['tokens_budget']:,}" if figures["tokens_budget"] else ""
        cost = "cost unknown" if figures["cost_usd"] is None else f"${figures['cost_usd']:.2f} spent"
        out.append(f"planner: {figures['planner']} ({figures['model'] or 'model unknown'}), "
                   f"{figures['tokens_used']:,}{of} tokens used, {cost}")
    note = ledger.handoff_note
    if note:
        by = f" (by {ledger.handoff_note_by} at {ledger.handoff_note_at})" if ledger.handoff_note_by else ""
        out.append(f"handoff_note{by}:")
        out.extend("  " + line for line in note.rstrip("\n").split("\n"))
    else:
        out.append("handoff_note: (none)")
    previous = ledger.previous_note
    if previous is not None:
        by = f" by {previous.by}" if previous.by else ""
        at = f" at {previous.at}" if previous.at else ""
        out.append(f"previous_note{by}{at}: see `handoff note --previous`")
    # One item a line: a newline inside ledger text (a task, a reason) is shown as ⏎, never a line of its own.
    print("\n".join(one_line(redactor.text(item)) for item in out))
    return 0


# -- check -----------------------------------------------------------------------


def problems(ledger) -> list[str]:
    """States that contradict each other (cheap, no command run)."""
    out = []
    steps = {s.name for s in ledger.steps()}
    for name, t in ledger.targets.items():
        if t.state == "awaiting_approval":
            if not t.awaiting:
                out.append(f"{name} is awaiting_approval but `awaiting` names no step")
            elif steps and t.awaiting not in steps:
                out.append(f"{name} awaits step {t.awaiting!r}, which the runbook does not have")
        elif t.awaiting:
            out.append(f"{name} names an awaited step ({t.awaiting}) but is {t.state}")
        if t.in_flight is not None and t.state == "done":
            out.append(f"{name} is done but has {t.in_flight.step} in flight")
        if t.in_flight is not None and steps and t.in_flight.step not in steps:
            out.append(f"{name} has unknown step {t.in_flight.step!r} in flight")
        for a in t.approvals:
            if steps and a.step not in steps:
                out.append(f"{name} holds an approval of unknown step {a.step!r}")
    return out


def cmd_check(args) -> int:
    if args.explain and args.json:
        raise UsageError("--explain prints text for people; run it without --json")
    if args.explain:
        from engine.checks.explain import explain_forms

        print(explain_forms())
        if not args.ledger:
            return 0
    if not args.ledger:
        raise UsageError("check needs a LEDGER (only --explain works without one)")
    accepting = args.accept_removal or args.accept_rollback
    handle = open_handle(args, read_only=not accepting)
    if accepting:
        handle.accept(removal=args.accept_removal, rollback=args.accept_rollback)
        done = [w for w, on in (("removal", args.accept_removal), ("rollback", args.accept_rollback)) if on]
        print(f"{' and '.join(done)} accepted (journaled); {len(handle.load().targets)} targets remain")
    snap = handle.snapshot()
    ledger = snap.ledger
    from engine.checks.live import check_statuses
    from engine.checks.report import check_findings

    statuses, unread = check_statuses(handle, ledger, live=args.live)  # the file alone, unless --live
    findings = check_findings(handle, snap, statuses, problems(ledger), handle.display_location, unread=unread)
    if args.explain:
        from engine.checks.explain import explain_ledger
        from engine.codec.textsafe import visible

        print(visible(explain_ledger(ledger)))
        from engine.approvals.policy import explain_approvals

        approvals = explain_approvals(ledger)
        if approvals:
            print(visible(approvals))
    return report_check(args, handle, ledger, statuses, findings)


def report_check(args, handle, ledger, statuses, findings) -> int:
    """Print the findings (text or --json); exit 1 when any is a problem."""
    from engine.checks import ERROR
    from engine.checks.finding import NOTICE, WARNING

    findings = [f for f in findings if f.severity != NOTICE or args.strict]  # notices: --strict only, never a problem
    problem = [f for f in findings if f.severity == ERROR or (args.strict and f.severity == WARNING)]
    unenforced = [f"invariant unenforced: {s.text} ({s.value})" for s in statuses if s.status == "unenforced"]
    redactor = handle.journal.redactor
    if args.json:  # stale readings are among the findings (warnings)
        json.dump(redactor.value({"ok": not problem, "problems": [f.text() for f in problem], "unenforced": unenforced,
                                  "invariants": [{"text": s.text, "status": s.status, "value": s.value, "stale": s.stale}
                                                 for s in statuses],
                                  "findings": [f.as_json() for f in findings]}), sys.stdout)
        sys.stdout.write("\n")
    else:
        from engine.codec.textsafe import visible

        for f in findings:
            label = {ERROR: "", NOTICE: "note: "}.get(f.severity, "warning: ")
            print(visible(redactor.text(f"{f.where}: {label}{f.message}" + (f"; {f.suggestion}" if f.suggestion else ""))))
        if not problem:
            print(visible(f"{handle.display_location}: ok ({len(ledger.targets)} targets, revision {ledger.revision})"))
    return 1 if problem else 0


# -- note --------------------------------------------------------------------------


def _note_json(args) -> int:
    """The note (or the previous one) as {note, by, at}, redacted; null when there is none."""
    handle = open_handle(args, read_only=True)
    ledger = handle.load()
    if args.previous:
        p = ledger.previous_note
        data = None if p is None else {"note": p.text, "by": p.by, "at": p.at}
    else:
        data = None if ledger.handoff_note is None else {
            "note": ledger.handoff_note, "by": ledger.handoff_note_by, "at": ledger.handoff_note_at}
    print(json_line(handle.journal.redactor.value(data)))
    return 0


def cmd_note(args) -> int:
    from engine.codec.textsafe import visible

    if args.json and args.text is None and not args.edit:
        return _note_json(args)
    if args.json:
        raise UsageError("--json reads the note; it does not go with --set or --edit")
    if args.previous:
        previous = open_handle(args, read_only=True).load().previous_note
        if previous is None:
            print("no previous note")
            return 0
        if previous.by or previous.at:
            print(visible(f"# by {previous.by or 'someone'} at {previous.at or 'an unknown time'}"))
        print(visible(previous.text.rstrip("\n")))
        return 0
    if args.text is None and not args.edit:
        handle = open_handle(args, read_only=True)
        ledger = handle.load()
        if ledger.handoff_note_by:
            print(visible(f"# by {ledger.handoff_note_by} at {ledger.handoff_note_at}"))
        print(visible(handle.journal.redactor.text((ledger.handoff_note or "").rstrip("\n"))))
        return 0
    handle = open_handle(args)
    if args.edit:
        base = handle.load().handoff_note or ""
        text = _edit(base)
        if text == base:
            print("note unchanged")
            return 0
        problems = handle.set_note(text, base=base)
    else:
        if args.text == "-":
            try:
                text = sys.stdin.buffer.read().decode("utf-8")
            except UnicodeDecodeError as err:
                raise UsageError(f"the note on stdin is not UTF-8 (byte {err.start}); nothing was changed") from None
        else:
            text = args.text
        problems = handle.set_note(text)
    print("handoff note saved")
    if problems:
        print(visible(f"the reviewer found {len(problems)} problem(s); your note is stored as you wrote it:"))
        for problem in problems:
            print(visible(f"- {problem}"))
    return 0


def _edit(text: str) -> str:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    import shlex

    try:
        argv = shlex.split(editor)
    except ValueError:  # an unclosed quote
        argv = []
    if not argv:  # blank: the note's own file would be run as the command
        raise UsageError(f"VISUAL or EDITOR is {editor!r}, which names no command: set VISUAL or EDITOR to your editor; "
                         "the note was not changed")
    with tempfile.NamedTemporaryFile("w+", suffix=".handoff-note.txt", delete=False, encoding="utf-8") as fh:
        fh.write(text)
        name = fh.name
    try:
        try:
            code = subprocess.call([*argv, name])
        except OSError as err:
            raise UsageError(f"cannot run {editor} ({os_error_text(err)}): set VISUAL or EDITOR to an installed editor; "
                             "the note was not changed") from None
        if code != 0:
            raise UsageError(f"{editor} exited with {code}; the note was not changed")
        try:
            with open(name, encoding="utf-8") as fh:
                return fh.read()
        except UnicodeDecodeError as err:
            raise UsageError(f"the note {editor} saved is not UTF-8 (byte {err.start}); save it as UTF-8 and edit again; "
                             "the note was not changed") from None
    finally:
        os.unlink(name)


# -- journal and schema ----------------------------------------------------------------


def cmd_journal(args) -> int:
    from engine.audit.journal import print_warnings
    from engine.audit.lines import format_record

    handle = open_handle(args, read_only=True)  # a clear error if the ledger is not there
    journal = handle.journal
    if args.verify:
        from engine.checks.chain import print_verdict

        return print_verdict(handle, args.json)
    records, offset = journal.read(0)
    emit = json_line if args.json else format_record
    if not args.follow:  # one buffered stream (a long journal is not a write per line)
        for record in records:
            print(emit(record))
        print_warnings(journal)
        return 0
    from engine.host import console

    # Following: a terminal gone without a hang-up leaves nobody to follow for, whether it
    # goes during what is there already, at the next record or while nothing comes; the
    # follower ends.
    for record in records:
        if not console.say(emit(record)):
            return 0
    print_warnings(journal)
    for record in journal.follow(offset, until=console.gone):
        print_warnings(journal)  # a journal cut short or replaced under the follower says so first
        if not console.say(emit(record)):
            return 0
    return 0


def cmd_schema(args) -> int:
    from engine.ledger.schema import ledger_schema

    json.dump(ledger_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
