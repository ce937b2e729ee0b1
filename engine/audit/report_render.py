"""The auditor's report as CSV, JSON or one self-contained HTML file.

Ledger text is data: CSV and JSON carry it as values, and HTML escapes every value
(`html.escape`); the HTML page has inline CSS only, no script, font or image fetched.
A CSV text cell that a spreadsheet would take for a formula (it starts with `=`, `+`, `-`,
`@`, a tab or a carriage return: a probe's output, a target's name, a reason) gets a `'`
in front, as OWASP's CSV-injection rule says: the auditor's spreadsheet shows the text and
runs nothing. Numbers (an exit code of -9) are written as they are.
"""

from __future__ import annotations

import csv
import html
import io
import json

from engine.audit.report import COLUMNS, Report
from engine.codec.jsontext import json_line
from engine.codec.textsafe import one_line, visible


def _cell(value) -> str:
    if isinstance(value, list):
        return "; ".join(map(str, value))
    if value is None:
        return ""
    return str(value)


def _flat(report: Report) -> list[dict[str, str]]:
    out = []
    for row in report.rows:
        data = row.__dict__
        out.append({c: (json.dumps(data[c], ensure_ascii=False) if c == "argv" else _cell(data[c])) for c in COLUMNS})
    return out


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


def _not_formula(text: str, value) -> str:
    """`text` (the cell of `value`) as a spreadsheet shows it as text: `'` before a formula's start."""
    if isinstance(value, int | float) or not text.startswith(_FORMULA_START):
        return text  # a number (bool too) is ours, never a formula
    return "'" + text


def to_json(report: Report) -> str:
    """The report as one JSON document."""
    return json_line(report.as_dict(), indent=2) + "\n"


def to_csv(report: Report) -> str:
    """One CSV row per step run; the proof follows as `#` comment lines (a spreadsheet shows them as rows)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    # Read in a terminal as often as in a spreadsheet: control characters spelled out (`\x1b`), as status prints them;
    # opened in a spreadsheet, no text cell is a formula.
    writer.writerows({column: _not_formula(visible(cell), data.__dict__[column]) for column, cell in row.items()}
                     for row, data in zip(_flat(report), report.rows, strict=True))
    for line in _proof_lines(report):
        buf.write(f"# {one_line(line)}\n")
    return buf.getvalue()


def _proof_lines(report: Report) -> list[str]:
    p = report.proof
    lines = [f"period: {report.start or 'the beginning'} to {report.end or 'now'}",
             f"journal records in the period: {p.records} (seq {p.first_seq} to {p.last_seq})",
             f"chain verified: {'yes' if p.chain_verified else 'NO'}"]
    lines += [f"break at seq {b['seq']}" + (f" (line {b['line']})" if b["line"] is not None else "") + f": {b['why']}"
              for b in p.breaks]
    lines += [f"gap at seq {g['seq']}: revision {g['rev']}'s {g['lost_kind']} record"
              + (f" about {g['target']}" if g.get("target") else "") + f" was lost ({g['error']})" for g in p.gaps]
    lines.append(f"no record missing: {'yes' if p.complete else 'NO'}")
    return lines


_CSS = """body{font:14px/1.4 sans-serif;margin:1.5em;color:#111;background:#fff}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #999;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#dde}td.flag{background:#fcc}.ok{color:#060;font-weight:bold}.bad{color:#b00;font-weight:bold}
code{font-family:monospace;white-space:pre-wrap}"""


def to_html(report: Report, title: str) -> str:
    """One self-contained HTML page: the proof first (is anything missing?), then the rows."""
    def e(value: str) -> str:  # ledger text as data: escaped, and bidi or invisible characters spelled out
        return html.escape(visible(value))
    p = report.proof
    verdict = '<span class="ok">yes</span>' if p.chain_verified else '<span class="bad">NO</span>'
    proof = "".join(f"<li>{e(line)}</li>" for line in _proof_lines(report)[:2])
    proof += f"<li>chain verified: {verdict}</li>"
    lines = _proof_lines(report)
    proof += "".join(f'<li class="bad">{e(line)}</li>' for line in lines[3:-1])
    proof += f'<li>{e(lines[-1])}</li>' if p.complete else f'<li class="bad">{e(lines[-1])}</li>'
    head = "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
    body = []
    for flat, row in zip(_flat(report), report.rows, strict=False):
        cells = []
        for c in COLUMNS:
            cls = ' class="flag"' if (c == "flags" and row.flags) or (c == "approved_before_start" and not row.approved_before_start) else ""
            cells.append(f"<td{cls}><code>{e(flat[c])}</code></td>" if c == "argv" else f"<td{cls}>{e(flat[c])}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    rows = "\n".join(body) or f'<tr><td colspan="{len(COLUMNS)}">no irreversible step ran in this period</td></tr>'
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n<h1>{e(title)}</h1>\n<h2>Completeness</h2><ul>{proof}</ul>\n"
            f"<h2>Irreversible steps run ({len(report.rows)})</h2>\n<table><thead><tr>{head}</tr></thead><tbody>\n"
            f"{rows}\n</tbody></table>\n</body></html>\n")
