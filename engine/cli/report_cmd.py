"""`handoff report`, `handoff show --at` and `handoff diff`: reading the record, never writing it.

    handoff report LEDGER [--from T] [--to T] [--format csv|json|html] [-o FILE]
    handoff show LEDGER --at REV|TIME
    handoff diff LEDGER REV1 [REV2]

All three open the ledger read-only and work from its journal (engine.audit.report,
engine.audit.time_travel). A bad time, an unknown ledger or a revision out of range is a
usage error: exit 2, one line, and nothing is written.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import timedelta

from engine.cli.arguments import output_file
from engine.codec.jsontext import json_line
from engine.errors import UsageError, os_error_text


def register(sub) -> None:
    """Add `report`, `show` and `diff` to the command line."""
    p = sub.add_parser("report", help="the auditor's report: every irreversible step run in a period, who asked, "
                                      "who approved, and proof that no journal record is missing")
    p.add_argument("ledger", help="the ledger file (or its postgresql:// location)")
    p.add_argument("--from", dest="start", metavar="T", help="from this time (ISO, UTC when no zone: 2026-09-09T14:00Z)")
    p.add_argument("--to", dest="end", metavar="T", help="up to this time, inclusive: a date, hour or minute includes all of it "
                                                        "(2026-09-30T23:59Z: up to 23:59:59)")
    p.add_argument("--format", choices=("csv", "json", "html"), default="csv", help="the form (default csv)")
    p.add_argument("-o", "--output", metavar="FILE", type=output_file, help="write it to FILE (refused if FILE exists) instead of printing")
    p.set_defaults(handler=cmd_report)
    p = sub.add_parser("show", help="the ledger as it was written at a past revision, rebuilt from its journal (read-only)")
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
    """The instant `--from` starts at, or the last instant `--to` covers: `--to` names a
    whole day, hour, minute or second and includes all of it (`--to 2026-09-30T23:59Z` is
    up to 23:59:59.999999, so a run started at 23:59:30 is in September's report)."""
    from engine.codec.timefmt import parse_time

    if text is None:
        return None
    stamp = parse_time(text)
    if stamp is None:
        raise UsageError(f"{flag} {text!r} is not a time; give an ISO time like 2026-09-09T14:00Z; nothing was written")
    return stamp + _named_unit(text) - _MICROSECOND if flag == "--to" else stamp


_MICROSECOND = timedelta(microseconds=1)
_UNIT = {0: timedelta(days=1), 2: timedelta(hours=1), 4: timedelta(minutes=1), 6: timedelta(seconds=1)}


def _named_unit(text: str) -> timedelta:
    """How long the time `text` names (it parsed): a day for a date alone, an hour, a
    minute or a second by the digits of its time; none (an instant) with a fraction."""
    time_part = re.match(r"\s*[^Tt ]*(?:[Tt ]([0-9:]*)([.,]?))?", text)
    digits, fraction = (time_part.group(1) or "", time_part.group(2)) if time_part else ("", "")
    if fraction:
        return _MICROSECOND
    return _UNIT.get(sum(c.isdigit() for c in digits), _MICROSECOND)


def _open(location: str):
    """The ledger, read-only; its journal is read through `handle.journal.stream()`
    (one record at a time: memory does not grow with the journal)."""
    from engine.api import open_ledger

    return open_ledger(location, read_only=True)


def cmd_report(args) -> int:
    """Print (or write with -o) the report; exit 1 when the journal's chain does not verify
    or a record is known to be lost (a `journal_gap`)."""
    from engine.audit import report_render as audit_render
    from engine.audit.report import build
    from engine.checks.chain import one_verdict

    start, end = _when(args.start, "--from"), _when(args.end, "--to")
    if start and end and start > end:
        raise UsageError(f"--from {args.start} is after --to {args.end}; nothing was written")
    if args.output and os.path.lexists(args.output):
        raise UsageError(f"{args.output} already exists; give a new file name (nothing was written)")
    handle = _open(args.ledger)
    irreversible = {s.name for s in handle.load().steps() if not s.reversible}  # no runbook: none
    report = build(handle.journal.stream(), one_verdict(handle), irreversible=irreversible, start=start, end=end)
    if args.format == "json":
        text = audit_render.to_json(report)
    elif args.format == "html":
        text = audit_render.to_html(report, f"handoff report: {handle.display_location}")
    else:
        text = audit_render.to_csv(report)
    if args.output:
        created = False
        try:
            with open(args.output, "x", encoding="utf-8") as fh:  # "x": never overwrite what is there
                created = True
                fh.write(text)
        except OSError as err:  # no such folder, a read-only mount, a full disk: nothing of it is left
            if created:
                os.unlink(args.output)  # the part written before the disk filled
            raise UsageError(f"{args.output} cannot be written ({os_error_text(err)}); give a file in a folder you "
                             "can write (nothing was written)") from None
        print(f"{args.output}: {len(report.rows)} irreversible step runs; chain verified: "
              f"{'yes' if report.proof.chain_verified else 'NO'}; records lost: {len(report.proof.gaps)}")
    else:
        sys.stdout.write(text)
    return 0 if report.proof.complete else 1


def _retry_to(handle) -> dict[str, str]:
    return {s.name: s.from_ for s in handle.load().steps()}  # a ledger without a runbook has none


def _writes(handle):
    """The records a rebuild folds (engine.store.history.ledger_at): the history journal's
    `ledger_write` records, then the journal's (the revisions they name)."""
    import itertools

    return itertools.chain(handle.store.open_history().stream(), handle.journal.stream())


def _chain_holds(handle) -> bool:
    """Verify both journals a rebuild comes from (as `handoff journal --verify` does); a
    break is said on stderr (what is rebuilt may have been changed) and makes the command exit 1."""
    from engine.checks.chain import journals
    from engine.codec.textsafe import visible

    ok = True
    for _, journal, verdict in journals(handle):
        ok = ok and verdict.ok
        for b in verdict.breaks[:10]:
            print(visible(f"warning: the journal's chain is broken at {journal.path}: {b.text()}; what is rebuilt "
                          f"from it may have been changed (see `handoff journal {handle.display_location} --verify`)"),
                  file=sys.stderr)
    return ok


def cmd_show(args) -> int:
    """Print the ledger as it was written at --at (a revision or a time), rebuilt from the
    journal's `ledger_write` records; where the journal cannot give the whole file, the
    targets as its other records say they were. Exit 1 when a write's record is missing."""
    from engine.audit.time_travel import WHAT, resolve_rev, state_at
    from engine.codec.canonical import emit_document
    from engine.codec.textsafe import visible
    from engine.store.history import ledger_at

    handle = _open(args.ledger)
    rev = resolve_rev(handle.journal.stream(), args.at)
    then = ledger_at(_writes(handle), rev)
    code = 1 if then.gap or not _chain_holds(handle) else 0
    if args.json:
        targets = state_at(handle.journal.stream(), rev, _retry_to(handle))
        print(json_line({"revision": rev, "written": then.written, "ledger": then.data, "why": then.why or None,
                          "rebuilt_from_seq": then.seqs or None, "what": WHAT,
                          "targets": {n: t.as_dict() for n, t in targets.items()}}))
        return code
    if then.data is not None:
        text, _ = emit_document(then.data)
        print(visible(f"# {handle.display_location} at revision {rev}" +
                      (f" (last written at revision {then.written})" if then.written != rev else "") +
                      f", rebuilt from its history journal (records seq {then.seqs[0]} to {then.seqs[-1]} of "
                      f"{handle.store.open_history().path})"))
        sys.stdout.write(visible(text))
        return code
    print(visible(f"{handle.display_location} at revision {rev}: the whole ledger cannot be rebuilt: {then.why}"))
    print(visible(f"what the journal's other records say: {WHAT}"))
    targets = state_at(handle.journal.stream(), rev, _retry_to(handle))
    for name in sorted(targets):
        t = targets[name].as_dict()
        extra = (f" (awaiting {t['awaiting']})" if t["awaiting"] else "") + \
                (f"  in flight: {t['in_flight']}" if t["in_flight"] else "") + \
                (f"  checkpoint {t['checkpoint']}" if t["checkpoint"] else "") + \
                (f"  approvals: {', '.join(t['approvals'])}" if t["approvals"] else "")
        print(visible(f"  {name}: {t['state']}{extra}  ({t['last_record']})"))
    if not targets:
        print("  no target has a journal record by this revision")
    return code


def cmd_diff(args) -> int:
    """Print what changed between two revisions (every field, from the rebuilt ledgers; the
    journal's target fields where a whole ledger cannot be rebuilt) and the records that made
    it; exit 1, as `show`, when either journal's chain is broken or a write's record is lost."""
    from engine.audit.time_travel import changes, data_diff, field_diff, head_rev, resolve_rev, state_at
    from engine.codec.textsafe import one_line, visible
    from engine.store.history import ledger_at

    handle = _open(args.ledger)
    rev1 = resolve_rev(handle.journal.stream(), args.rev1)
    rev2 = resolve_rev(handle.journal.stream(), args.rev2) if args.rev2 is not None else head_rev(handle.journal.stream())
    if rev1 > rev2:
        rev1, rev2 = rev2, rev1  # "what changed between" reads the same either way round
    one, two = ledger_at(_writes(handle), rev1), ledger_at(_writes(handle), rev2)
    if one.data is not None and two.data is not None:
        lines = [line for line in data_diff(one.data, two.data) if not line.startswith("revision:")]
        print(visible(f"{handle.display_location}: revision {rev1} -> {rev2} (the whole ledger, rebuilt from the journal)"))
    else:
        retry_to = _retry_to(handle)
        lines = field_diff(state_at(handle.journal.stream(), rev1, retry_to), state_at(handle.journal.stream(), rev2, retry_to))
        why = one.why if one.data is None else two.why
        print(visible(f"{handle.display_location}: revision {rev1} -> {rev2} (target fields from the journal's records; "
                      f"the whole ledger cannot be rebuilt: {why})"))
    for line in lines or ["nothing changed"]:
        print(visible(f"  {line}"))
    made = changes(handle.journal.stream(), rev1, rev2)
    print(f"records that made revisions {rev1 + 1} to {rev2}:" if made else "no record made a revision in between")
    for r in made:
        print(one_line(f"  seq {r.get('seq')} rev {r.get('rev')} {r.get('kind')} by {r.get('actor')}: {r.get('msg')}"))
    return 0 if _chain_holds(handle) and not (one.gap or two.gap) else 1
