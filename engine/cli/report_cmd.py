"""`handoff report`, `handoff show --at` and `handoff diff`: reading the record, never writing it.

    handoff report LEDGER [--from T] [--to T] [--format csv|json|html] [-o FILE]
    handoff show LEDGER --at REV|TIME
    handoff diff LEDGER REV1 [REV2]

All three open the ledger read-only and work from its journal (engine.audit.report,
engine.audit.time_travel). A bad time, an unknown ledger or a revision out of range is a
usage error: exit 2, one line, and nothing is written.
"""

from __future__ import annotations

import json
import os
import sys

from engine.errors import UsageError


def register(sub) -> None:
    """Add `report`, `show` and `diff` to the command line."""
    p = sub.add_parser("report", help="the auditor's report: every irreversible step run in a period, who asked, "
                                      "who approved, and proof that no journal record is missing")
    p.add_argument("ledger", help="the ledger file (or its postgresql:// location)")
    p.add_argument("--from", dest="start", metavar="T", help="from this time (ISO, UTC when no zone: 2026-09-09T14:00Z)")
    p.add_argument("--to", dest="end", metavar="T", help="up to this time (inclusive)")
    p.add_argument("--format", choices=("csv", "json", "html"), default="csv", help="the form (default csv)")
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (refused if FILE exists) instead of printing")
    p.set_defaults(handler=cmd_report)
    p = sub.add_parser("show", help="the ledger's targets as the journal says they were at a past revision (read-only)")
    p.add_argument("ledger", help="the ledger file (or its postgresql:// location)")
    p.add_argument("--at", required=True, metavar="REV", help="a revision number, or a time (the last revision by then)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    p.set_defaults(handler=cmd_show)
    p = sub.add_parser("diff", help="what changed between two revisions, and which journal records did it")
    p.add_argument("ledger", help="the ledger file (or its postgresql:// location)")
    p.add_argument("rev1", metavar="REV1", help="the earlier revision (or time)")
    p.add_argument("rev2", metavar="REV2", nargs="?", help="the later one (default: the latest)")
    p.set_defaults(handler=cmd_diff)


def _when(text: str | None, flag: str):
    from engine.codec.timefmt import parse_time

    if text is None:
        return None
    stamp = parse_time(text)
    if stamp is None:
        raise UsageError(f"{flag} {text!r} is not a time; give an ISO time like 2026-09-09T14:00Z; nothing was written")
    return stamp


def _open(location: str):
    from engine.api import open_ledger

    handle = open_ledger(location, read_only=True)
    records, _ = handle.journal.read(0)
    return handle, records


def cmd_report(args) -> int:
    """Print (or write with -o) the report; exit 1 when the journal's chain does not verify."""
    from engine.audit import report_render as audit_render
    from engine.audit.report import build
    from engine.checks.chain import verdict_of

    start, end = _when(args.start, "--from"), _when(args.end, "--to")
    if start and end and start > end:
        raise UsageError(f"--from {args.start} is after --to {args.end}; nothing was written")
    if args.output and os.path.lexists(args.output):
        raise UsageError(f"{args.output} already exists; give a new file name (nothing was written)")
    handle, records = _open(args.ledger)
    irreversible = {s.name for s in handle.load().runbook.steps if not s.reversible}
    report = build(records, verdict_of(handle), irreversible=irreversible, start=start, end=end)
    if args.format == "json":
        text = audit_render.to_json(report)
    elif args.format == "html":
        text = audit_render.to_html(report, f"handoff report: {handle.display_location}")
    else:
        text = audit_render.to_csv(report)
    if args.output:
        with open(args.output, "x", encoding="utf-8") as fh:  # "x": never overwrite what is there
            fh.write(text)
        print(f"{args.output}: {len(report.rows)} irreversible step runs; chain verified: "
              f"{'yes' if report.proof.chain_verified else 'NO'}")
    else:
        sys.stdout.write(text)
    return 0 if report.proof.chain_verified else 1


def _retry_to(handle) -> dict[str, str]:
    return {s.name: s.from_ for s in handle.load().runbook.steps}


def cmd_show(args) -> int:
    """Print the targets as the journal says they were at --at (a revision or a time)."""
    from engine.audit.time_travel import WHAT, resolve_rev, state_at
    from engine.codec.textsafe import visible

    handle, records = _open(args.ledger)
    rev = resolve_rev(records, args.at)
    then = state_at(records, rev, _retry_to(handle))
    if args.json:
        print(json.dumps({"revision": rev, "what": WHAT, "targets": {n: t.as_dict() for n, t in then.items()}},
                         ensure_ascii=False))
        return 0
    print(visible(f"{handle.display_location} at revision {rev}: {WHAT}"))
    for name in sorted(then):
        t = then[name].as_dict()
        extra = (f" (awaiting {t['awaiting']})" if t["awaiting"] else "") + \
                (f"  in flight: {t['in_flight']}" if t["in_flight"] else "") + \
                (f"  checkpoint {t['checkpoint']}" if t["checkpoint"] else "") + \
                (f"  approvals: {', '.join(t['approvals'])}" if t["approvals"] else "")
        print(visible(f"  {name}: {t['state']}{extra}  ({t['last_record']})"))
    if not then:
        print("  no target has a journal record by this revision")
    return 0


def cmd_diff(args) -> int:
    """Print the rebuilt fields that changed between two revisions and the records that made them."""
    from engine.audit.time_travel import changes, field_diff, head_rev, resolve_rev, state_at
    from engine.codec.textsafe import one_line, visible

    handle, records = _open(args.ledger)
    rev1 = resolve_rev(records, args.rev1)
    rev2 = resolve_rev(records, args.rev2) if args.rev2 is not None else head_rev(records)
    if rev1 > rev2:
        rev1, rev2 = rev2, rev1  # "what changed between" reads the same either way round
    retry_to = _retry_to(handle)
    lines = field_diff(state_at(records, rev1, retry_to), state_at(records, rev2, retry_to))
    print(visible(f"{handle.display_location}: revision {rev1} -> {rev2} (rebuilt from the journal)"))
    for line in lines or ["no rebuilt field changed"]:
        print(visible(f"  {line}"))
    made = changes(records, rev1, rev2)
    print(f"records that made revisions {rev1 + 1} to {rev2}:" if made else "no record made a revision in between")
    for r in made:
        print(one_line(f"  seq {r.get('seq')} rev {r.get('rev')} {r.get('kind')} by {r.get('actor')}: {r.get('msg')}"))
    return 0
