"""The ledger commands of `handoff`: check, status, approve, unapprove, reject, note,
pause, unpause, retry, block, unblock, journal, schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from engine.errors import UsageError


def add_who(parser) -> None:
    parser.add_argument("--as", dest="actor", metavar="NAME", help="who is acting (default: the login user)")


def register(sub) -> None:
    p = sub.add_parser("check", help="validate a ledger; exit 0 valid, 1 problems, 2 unreadable")
    p.add_argument("ledger")
    p.add_argument("--strict", action="store_true", help="an unenforced invariant is a problem too")
    p.add_argument("--json", action="store_true")
    p.add_argument("--accept-removal", action="store_true", help="record that targets missing from the file were removed on purpose")
    add_who(p)
    p.set_defaults(handler=cmd_check)

    p = sub.add_parser("status", help="the summary: counts, awaiting approvals, invariants, the handoff note")
    p.add_argument("ledger")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("approve", help="approve a target's irreversible step")
    p.add_argument("ledger")
    p.add_argument("target")
    p.add_argument("--step", help="the step to approve (default: the one it awaits)")
    p.add_argument("--comment")
    add_who(p)
    p.set_defaults(handler=cmd_approve)

    p = sub.add_parser("unapprove", help="withdraw an unused approval")
    p.add_argument("ledger")
    p.add_argument("target")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.unapprove(a.target), f"approval on {a.target} withdrawn"))

    p = sub.add_parser("reject", help="reject a target's awaiting step (the target is blocked)")
    p.add_argument("ledger")
    p.add_argument("target")
    p.add_argument("--reason", required=True)
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.reject(a.target, _reason(a.reason)), f"{a.target} rejected and blocked"))

    p = sub.add_parser("note", help="print the handoff note, or set it")
    p.add_argument("ledger")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--set", dest="text", metavar="TEXT", help="the new note (`-` reads it from stdin)")
    group.add_argument("--edit", action="store_true", help="edit it in $EDITOR")
    add_who(p)
    p.set_defaults(handler=cmd_note)

    p = sub.add_parser("pause", help="pause the ledger: no session starts a step")
    p.add_argument("ledger")
    p.add_argument("--reason", required=True)
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.pause(_reason(a.reason)), "ledger paused"))

    p = sub.add_parser("unpause", help="lift a pause")
    p.add_argument("ledger")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.unpause(), "ledger unpaused"))

    p = sub.add_parser("retry", help="send a failed target back to the state its step started from")
    p.add_argument("ledger")
    p.add_argument("target")
    p.add_argument("--force", action="store_true", help="also after a failed irreversible step (needs --reason)")
    p.add_argument("--reason")
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.retry(a.target, force=a.force, reason=a.reason), f"{a.target} queued for a retry"))

    p = sub.add_parser("block", help="block a target with a reason")
    p.add_argument("ledger")
    p.add_argument("target")
    p.add_argument("--reason", required=True)
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.block(a.target, _reason(a.reason)), f"{a.target} blocked"))

    p = sub.add_parser("unblock", help="put a blocked or failed target where it really is")
    p.add_argument("ledger")
    p.add_argument("target")
    p.add_argument("--to", required=True, metavar="STATE")
    p.add_argument("--reason", required=True)
    add_who(p)
    p.set_defaults(handler=lambda a: _simple(a, lambda h: h.unblock(a.target, a.to, _reason(a.reason)), f"{a.target} is now {a.to}"))

    p = sub.add_parser("journal", help="print the journal (the audit trail)")
    p.add_argument("ledger")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new records")
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    p.set_defaults(handler=cmd_journal)

    p = sub.add_parser("schema", help="print the ledger's JSON Schema (for editors)")
    p.set_defaults(handler=cmd_schema)


def _reason(text: str) -> str:
    if not text or not text.strip():
        raise UsageError("--reason must say why (it goes to the journal)")
    return text.strip()


def _open(args, *, read_only: bool = False):
    from engine.api import open_ledger

    return open_ledger(args.ledger, actor=getattr(args, "actor", None), read_only=read_only)


def _simple(args, action, done: str) -> int:
    from engine.textsafe import visible

    handle = _open(args)
    action(handle)
    print(visible(done))
    return 0


def cmd_approve(args) -> int:
    from engine.textsafe import visible

    handle = _open(args)
    approval = handle.approve(args.target, step=args.step, comment=args.comment)
    print(visible(f"{args.target}: {approval.step} approved by {approval.by} ({approval.user}) at {approval.at}; "
                  f"bound to command hash {approval.hash} and checkpoint {approval.checkpoint or '-'}"))
    return 0


# -- status ----------------------------------------------------------------------


def summary_line(counts: dict[str, int]) -> str:
    """`17 done, 1 replicating, 20 queued, 1 blocked, 1 failed` (the article's words)."""
    return ", ".join(f"{n} {state}" for state, n in counts.items()) or "no targets"


def status_data(handle, ledger) -> dict[str, Any]:
    """The JSON shape of `handoff status --json`."""
    from engine.touched import touched

    awaiting = [
        {"target": name, "step": t.awaiting, "by": t.awaiting_by, "since": t.awaiting_since}
        for name, t in ledger.targets.items()
        if t.state == "awaiting_approval"
    ]
    return {
        "task": ledger.task,
        "revision": ledger.revision,
        "counts": ledger.counts(),
        "targets": {name: t.model_dump(mode="json", by_alias=True) for name, t in ledger.targets.items()},
        "awaiting": awaiting,
        "touched": len(touched(ledger)),
        "invariants": [{"text": s.text, "status": s.status, "value": s.value, "stale": s.stale} for s in handle.invariants(ledger)],
        "handoff_note": ledger.handoff_note,
        "paused": ledger.paused.model_dump(mode="json") if ledger.paused else None,
    }


def cmd_status(args) -> int:
    handle = _open(args, read_only=True)
    snap = handle.snapshot()
    ledger = snap.ledger
    data = status_data(handle, ledger)
    if args.json:
        # One write: json.dump to a stream makes one write call per token (~700k at 10k targets).
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return 0
    from engine.textsafe import visible

    out = [f"{ledger.task} (revision {ledger.revision}" + (f", owner {ledger.owner_shift}" if ledger.owner_shift else "") + ")"]
    if ledger.environment:
        out.append(f"environment: {ledger.environment}")
    out.append(f"loaded ledger: {summary_line(data['counts'])}")
    if ledger.paused:
        out.append(f"PAUSED by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}")
    for warning in snap.warnings:
        out.append(f"WARNING: {warning}")
    for item in data["awaiting"]:
        out.append(f"awaiting approval: {item['target']} {item['step'] or ''} (asked by {item['by'] or '?'} since {item['since'] or '?'})")
    out.append(f"touched: {data['touched']}")
    for inv in data["invariants"]:
        status = f"{inv['status']} (stale)" if inv.get("stale") else inv["status"]
        out.append(f"invariant {status:<10} {inv['text']}  [{inv['value']}]")
    state = handle.session_state(ledger)
    out.append(f"session: {state.status}" + (f" - {state.detail}" if state.detail else ""))
    note = ledger.handoff_note
    if note:
        by = f" (by {ledger.handoff_note_by} at {ledger.handoff_note_at})" if ledger.handoff_note_by else ""
        out.append(f"handoff_note{by}:")
        out.extend("  " + line for line in note.rstrip("\n").split("\n"))
    else:
        out.append("handoff_note: (none)")
    print(visible("\n".join(out)))
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
    handle = _open(args, read_only=not args.accept_removal)
    if args.accept_removal:
        remaining = handle.accept_removal()
        print(f"removal accepted; {remaining} targets remain")
    snap = handle.snapshot()
    ledger = snap.ledger
    statuses = handle.invariants(ledger)
    found = list(snap.warnings) + problems(ledger)
    found += [f"invariant violated: {s.text} ({s.value})" for s in statuses if s.status == "violated"]
    unenforced = [f"invariant unenforced: {s.text} ({s.value})" for s in statuses if s.status == "unenforced"]
    # A stale reading is not a problem with the file (a session reads the metric afresh), but
    # `check` must not call it ok either: it is a warning, a problem under --strict.
    stale = [f"invariant unknown (stale): {s.text} ({s.value})" for s in statuses if s.stale]
    if args.strict:
        found += unenforced + stale
    if args.json:
        json.dump({"ok": not found, "problems": found, "unenforced": unenforced, "stale": stale,
                   "invariants": [{"text": s.text, "status": s.status, "value": s.value, "stale": s.stale} for s in statuses]}, sys.stdout)
        sys.stdout.write("\n")
    else:
        from engine.textsafe import visible

        for line in found:
            print(visible(f"{args.ledger}: {line}"))
        if not args.strict:
            for line in unenforced + stale:
                print(visible(f"{args.ledger}: warning: {line}"))
        if not found:
            print(visible(f"{args.ledger}: ok ({len(ledger.targets)} targets, revision {ledger.revision})"))
    return 1 if found else 0


# -- note --------------------------------------------------------------------------


def cmd_note(args) -> int:
    from engine.textsafe import visible

    if args.text is None and not args.edit:
        ledger = _open(args, read_only=True).load()
        if ledger.handoff_note_by:
            print(visible(f"# by {ledger.handoff_note_by} at {ledger.handoff_note_at}"))
        print(visible((ledger.handoff_note or "").rstrip("\n")))
        return 0
    handle = _open(args)
    if args.edit:
        base = handle.load().handoff_note or ""
        text = _edit(base)
        if text == base:
            print("note unchanged")
            return 0
        handle.set_note(text, base=base)
    else:
        if args.text == "-":
            try:
                text = sys.stdin.buffer.read().decode("utf-8")
            except UnicodeDecodeError as err:
                raise UsageError(f"the note on stdin is not UTF-8 (byte {err.start}); nothing was changed") from None
        else:
            text = args.text
        handle.set_note(text)
    print("handoff note saved")
    return 0


def _edit(text: str) -> str:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    import shlex

    with tempfile.NamedTemporaryFile("w+", suffix=".handoff-note.txt", delete=False, encoding="utf-8") as fh:
        fh.write(text)
        name = fh.name
    try:
        code = subprocess.call([*shlex.split(editor), name])
        if code != 0:
            raise UsageError(f"{editor} exited with {code}; the note was not changed")
        with open(name, encoding="utf-8") as fh:
            return fh.read()
    finally:
        os.unlink(name)


# -- journal and schema ----------------------------------------------------------------


def format_record(record: dict[str, Any]) -> str:
    """`[02:11:04] message` with the actor when it is a person's."""
    from engine.textsafe import visible

    ts = str(record.get("ts", ""))
    clock = ts[11:19] if len(ts) >= 19 else ts
    return visible(f"[{clock}] {record.get('msg', record.get('kind', ''))}")


def cmd_journal(args) -> int:
    from engine.journal import print_warnings

    journal = _open(args, read_only=True).journal  # a clear error if the ledger is not there
    records, offset = journal.read(0)
    emit = (lambda r: json.dumps(r, ensure_ascii=False)) if args.json else format_record
    for record in records:
        print(emit(record))
    print_warnings(journal)
    if args.follow:
        sys.stdout.flush()
        for record in journal.follow(offset):
            print(emit(record), flush=True)
    return 0


def cmd_schema(args) -> int:
    from engine.model import Ledger

    schema = Ledger.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "handoff ledger (format v1)"
    json.dump(schema, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
