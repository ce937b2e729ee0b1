"""`handoff report --to` given to the minute covers that whole minute: the documented monthly
period keeps a run started in its last minute (review `web`, finding 5)."""

from __future__ import annotations


def test_the_documented_monthly_period_includes_a_run_in_its_last_minute() -> None:
    """Promise (docs/operating.md "For auditors"): `handoff report ledger.yaml --from
    2026-09-01T00:00Z --to 2026-09-30T23:59Z ...` "lists every irreversible step run in the
    period"; `--to T`: "up to this time (inclusive)".

    What happens: `--to 2026-09-30T23:59Z` is parsed as the instant 23:59:00, and journal times
    have one-second resolution, so a link started at 23:59:30 on 30 September is left out of
    the September report (engine/audit/report.py:_in, `stamp <= end`), while the October report
    (`--from 2026-10-01T00:00Z`) leaves it out too: following the documented example month by
    month, that run is in no report, and the proof's "no record missing: yes" still holds."""
    from engine.audit.report import build
    from engine.audit.verify import Verdict
    from engine.cli.report_cmd import _when

    records = [
        {"kind": "approval", "target": "db-1", "step": "link", "hash": "h1", "actor": "alice",
         "at": "2026-09-30T23:59:10Z", "ts": "2026-09-30T23:59:10Z", "seq": 100},
        {"kind": "step_start", "target": "db-1", "step": "link", "approval_hash": "h1", "approval_by": "alice",
         "approval_at": "2026-09-30T23:59:10Z", "ts": "2026-09-30T23:59:30Z", "seq": 200, "token": "s/1"},
        {"kind": "step_end", "target": "db-1", "step": "link", "token": "s/1", "exit_code": 0, "duration": 1.0,
         "ts": "2026-09-30T23:59:31Z", "seq": 300},
    ]
    september = build(records, Verdict(), irreversible={"link"}, start=_when("2026-09-01T00:00Z", "--from"),
                      end=_when("2026-09-30T23:59Z", "--to"))
    october = build(records, Verdict(), irreversible={"link"}, start=_when("2026-10-01T00:00Z", "--from"),
                    end=_when("2026-10-31T23:59Z", "--to"))
    reported = [r.seq for r in september.rows] + [r.seq for r in october.rows]
    assert reported == [200], f"the link started 2026-09-30T23:59:30Z is in {len(reported)} of the two monthly reports"
