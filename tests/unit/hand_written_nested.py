"""Hand-written ledgers with richer target layouts than tests/unit/hand_written.py (for tests/unit/test_kept_props.py): block
targets with block scalars (|, |-, |+, >, >-), nested evidence/in_flight/approvals,
extras holding lists and mappings, comments on a target's key line (a slow target),
numbers with their own spelling, flow targets over several lines."""

from __future__ import annotations

import json
import re

from hypothesis import strategies as st

from engine.codec.strict import is_plain_string

WORDS = ["text", "two words", "x: y", "#no", "null", "~", "no", "1e3", "0x1F", "+5", "1.30", "012", " lead", "trail ",
         "é😀", "a'b", 'a"b', "", "1:30", "-", "[x]", "{y}", "0/9A3F2C10"]
NUMS = ["1.30", "1e3", "+5", "012", "0x1F", "-0", "1_000", ".5", "7", "2.5"]
DURATIONS = ["1.30", "1e3", "2.5", "7", "+5", ".5", "1.0", "3"]
NAMES = ["db-1", "db-2", "db-3", "1.10", "no", "web 3", "x_y", "a"]
STATES = ["queued", "checked", "verified", "done", "blocked", "failed"]
TEXT_FIELDS = ["checkpoint", "last_action", "next_action", "reason", "verified_at", "awaiting_by"]


def inline(draw, text: str) -> str:
    styles = ["double"]
    if "\n" not in text:
        styles.append("single")
    if text and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_./+ -]*", text) and is_plain_string(text) and not text.endswith(" "):
        styles.append("plain")
    style = draw(st.sampled_from(styles))
    if style == "plain":
        return text
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text, ensure_ascii=False)


def block_scalar(draw, indent: int) -> list[str]:
    """`|`-style indicator and its content lines."""
    ind = draw(st.sampled_from(["|", "|-", "|+", ">", ">-", ">+"]))
    lines = draw(st.lists(st.sampled_from(["text", "more words here", "x: y # not a comment", "  indented", "é"]),
                          min_size=1, max_size=3))
    if lines[0].startswith(" "):
        lines[0] = lines[0].strip()
    out = [ind] + [" " * indent + line for line in lines]
    if ind.endswith("+") and draw(st.booleans()):
        out.append("")  # a kept trailing blank line
    return out


def key_name(draw, name: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) and draw(st.booleans()):
        return name
    return json.dumps(name)


@st.composite
def target_lines(draw, name: str, comment) -> list[str]:
    state = draw(st.sampled_from(STATES))
    key = key_name(draw, name)
    layout = draw(st.sampled_from(["flow", "flow-wrapped", "block", "block", "block"]))
    fields = {f: draw(st.sampled_from(WORDS)) for f in draw(st.lists(st.sampled_from(TEXT_FIELDS), max_size=3, unique=True))}
    extras = {}
    if draw(st.booleans()):
        extras["weight"] = draw(st.sampled_from(NUMS))  # a number with its spelling
    if layout.startswith("flow"):
        items = [f"state: {state}"] + [f"{k}: {inline(draw, v)}" for k, v in fields.items()] + [f"{k}: {v}" for k, v in extras.items()]
        if draw(st.booleans()):
            items.append("evidence: {step: link, exit_code: 1, duration: " + draw(st.sampled_from(DURATIONS)) + "}")
        if draw(st.booleans()):
            items.append("tags: [a, 'b', 1.30]")
        if layout == "flow" or len(items) == 1:
            return [f"  {key}: {{{', '.join(items)}}}" + (f"  {comment()}" if draw(st.booleans()) else "")]
        out = [f"  {key}: {{{items[0]},"]
        for i, item in enumerate(items[1:]):
            out.append(f"    {item}" + ("," if i < len(items) - 2 else "}"))
        return out
    head = f"  {key}:" + (f"  {comment()}" if draw(st.integers(0, 2)) == 0 else "")
    out = [head, f"    state: {state}"]
    entries = list(fields.items())
    for k, v in entries:
        if draw(st.integers(0, 3)) == 0:
            rows = block_scalar(draw, 6)
            out.append(f"    {k}: {rows[0]}")
            out.extend(rows[1:])
        else:
            out.append(f"    {k}: {inline(draw, v)}")
        if draw(st.integers(0, 5)) == 0:
            out.append("    " + comment())
    for k, v in extras.items():
        out.append(f"    {k}: {v}")
    if draw(st.booleans()):
        out += ["    evidence:", "      step: link", f"      exit_code: {draw(st.integers(-1, 3))}",
                f"      duration: {draw(st.sampled_from(DURATIONS))}"]
    if draw(st.integers(0, 3)) == 0:
        out += ["    in_flight:", "      step: link", "      pid: 123"]
    if draw(st.integers(0, 3)) == 0:
        dash = draw(st.sampled_from(["    - ", "    - "]))
        out += ["    approvals:", f"{dash}by: alice", "      user: alice", "      at: '2026-01-01T00:00Z'", "      step: link",
                f"      hash: {draw(st.sampled_from(['abc', '012', '1e3', '90118711690768e1']))}"]
    if draw(st.integers(0, 3)) == 0:
        out += ["    tags:", "    - a", f"    - {draw(st.sampled_from(NUMS))}", "    - {k: v}"]
    if draw(st.integers(0, 4)) == 0:
        rows = block_scalar(draw, 6)
        out.append(f"    notes: {rows[0]}")
        out.extend(rows[1:])
    return out


@st.composite
def nested_ledgers(draw) -> str:
    counter = [0]

    def comment() -> str:
        counter[0] += 1
        return f"#c{counter[0]} {draw(st.sampled_from(['', 'note: x', 'a # b', '{x}']))}".rstrip()

    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    rows = ["task: fleet"]
    if draw(st.booleans()):
        rows += ["invariants:", "- never touch more than 2 dbs concurrently"]
    rows.append("targets:" + (f"  {comment()}" if draw(st.booleans()) else ""))
    for name in names:
        for _ in range(draw(st.integers(0, 1))):
            rows.append(draw(st.sampled_from(["", "  " + comment(), comment()])))
        rows += draw(target_lines(name, comment))
    if draw(st.booleans()):
        note = block_scalar(draw, 2) if draw(st.booleans()) else [inline(draw, draw(st.sampled_from(WORDS)))]
        rows.append("handoff_note: " + note[0])
        rows += note[1:]
    if draw(st.booleans()):
        rows += ["app_team:", "  contact: ops", "  since: 1.30"]
    return "\n".join(rows) + "\n"
