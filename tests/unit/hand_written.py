"""A hypothesis strategy for ledgers as people write them by hand.

Comments everywhere a human can put one (a header, between entries, at the end of a
line, between list items and targets, inside block mappings, inside a flow mapping
written over several lines, after a block scalar's indicator), blank lines, every
quoting style (plain, single, double, `|`, `>`), names and checkpoints that look like
numbers (`1.10` beside `1.1`, `1.30`, `1e3`), shell-string and list `run:` commands,
defaults left out (`retries`, `reversible: false`).

Each document comes with who owns each line (a top-level key, a target, or nobody:
a gap), so a test can tell which lines a change may touch, and a unique token in
every comment (`#c12 ...`), so a test can tell that none was lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

from engine.codec.strict import FLOAT, INT, is_plain_string

# Text a person puts in a comment: quotes, colons, braces and `#` included.
_COMMENT_TEXT = st.sampled_from(["", "app team says wait for Monday", "don't: touch {this}", 'say "hi" # twice',
                                 "1.30", "- not a list", "é 😀", "'single' and \"double\"", "key: value"])
STRINGS = ["1.30", "1.10", "1.1", "1e3", "012", "0/9A3F2C10", "12:30:00", "no", "on", "x #y", "a: b", "plain words",
           "-5", "+5", "-0", "1_000", "~", "", "it's", 'say "hi"', "tab\there", "two\nlines", "é"]
NAMES = ["db-1", "db-2", "1.10", "1.1", "012", "no", "web 3", "x_y", "-0", "1e3"]


@dataclass
class Doc:
    """Lines with their owners: ("top", key), ("target", name) or None (a gap)."""

    rows: list[tuple[tuple[str, str] | None, str]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)  # what the model should read (strings as typed)

    @property
    def text(self) -> str:
        return "\n".join(line for _, line in self.rows) + "\n"


class Writer:
    """Draws layout choices and keeps the document's rows."""

    def __init__(self, draw) -> None:
        self.draw = draw
        self.doc = Doc()

    def comment(self) -> str:
        token = f"#c{len(self.doc.comments)}"
        text = f"{token} {self.draw(_COMMENT_TEXT)}".rstrip()
        self.doc.comments.append(token)
        return text

    def maybe(self, p: int = 3) -> bool:
        """True about once in `p` draws."""
        return self.draw(st.integers(0, p - 1)) == 0

    def trailing(self, line: str) -> str:
        return f"{line}{' ' * self.draw(st.integers(1, 3))}{self.comment()}" if self.maybe() else line

    def gap(self, indent: str = "") -> None:
        """Blank lines and full-line comments between entries."""
        for _ in range(self.draw(st.integers(0, 2))):
            if self.maybe(2):
                self.doc.rows.append((None, ""))
            else:
                self.doc.rows.append((None, (indent if self.maybe(2) else "") + self.comment()))

    def add(self, owner, line: str) -> None:
        self.doc.rows.append((owner, line))


def scalar(draw, text: str, flow: bool) -> str:
    """`text` in a style that reads back as the same string (numbers as their source text)."""
    styles = ["double"]
    numeric = bool(INT.match(text) or FLOAT.match(text))
    plain_safe = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_./+-]*(?::[0-9]+)*", text) is not None
    if text and (numeric or (plain_safe and is_plain_string(text))) and (not flow or plain_safe):
        styles.append("plain")
    if "\n" not in text and "\t" not in text:
        styles.append("single")
    style = draw(st.sampled_from(styles))
    if style == "plain":
        return text
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text, ensure_ascii=False)


def name_text(draw, name: str) -> str:
    """A target name as a key: plain when it reads back as itself (keys are source text)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) and draw(st.booleans()):
        return name
    return scalar(draw, name, True) if draw(st.booleans()) else json.dumps(name)


@st.composite
def targets(draw, names):
    """name -> data; awaiting targets wait on the irreversible `link`."""
    out = {}
    for name in names:
        state = draw(st.sampled_from(["queued", "checked", "awaiting_approval", "verified", "blocked", "done"]))
        target = {"state": state}
        if state == "awaiting_approval":
            target.update(awaiting="link", awaiting_by="agent:s1")
        if draw(st.booleans()):
            target["checkpoint"] = draw(st.sampled_from(STRINGS))
        if draw(st.booleans()):
            target["last_action"] = draw(st.sampled_from(STRINGS))
        if state == "blocked":
            target["reason"] = draw(st.sampled_from(STRINGS))
        out[name] = target
    return out


def _target(w: Writer, name: str, target: dict) -> None:
    owner = ("target", name)
    key = name_text(w.draw, name)
    layout = w.draw(st.sampled_from(["flow", "flow-wrapped", "block"]))
    items = [(k, scalar(w.draw, v, True) if isinstance(v, str) else str(v)) for k, v in target.items()]
    if layout == "flow":
        w.add(owner, w.trailing(f"  {key}: {{{', '.join(f'{k}: {v}' for k, v in items)}}}"))
    elif layout == "flow-wrapped":
        first, *rest = items
        lines = [f"  {key}: {{{first[0]}: {first[1]}" + ("," if rest else "}")]
        for i, (k, v) in enumerate(rest):
            lines.append(f"    {k}: {v}" + ("," if i < len(rest) - 1 else "}"))
        for i, line in enumerate(lines):
            # A comment inside a flow mapping must follow a comma (or end the last line).
            w.add(owner, w.trailing(line) if line.endswith((",", "}")) else line)
            if i < len(lines) - 1 and w.maybe(4):
                w.add(owner, "    " + w.comment())
    else:
        w.add(owner, w.trailing(f"  {key}:"))
        for k, v in target.items():
            text = scalar(w.draw, v, False) if isinstance(v, str) else str(v)
            w.add(owner, w.trailing(f"    {k}: {text}"))
            if w.maybe(4):
                w.add(owner, "    " + w.comment())


RUNBOOK = [
    {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["echo", "check", "{target}"]},
    {"name": "link", "from": "checked", "to": "replicating", "run": ["echo", "link", "{target}"]},
    {"name": "sync", "from": "replicating", "to": "verified", "reversible": True, "retries": 2, "run": ["echo", "s"]},
    {"name": "cutover", "from": "verified", "to": "done", "run": ["echo", "cutover", "{target}", "{checkpoint}"]},
]


def _runbook(w: Writer) -> None:
    owner = ("top", "runbook")
    w.add(owner, w.trailing("runbook:"))
    w.add(owner, "  steps:")
    dash = w.draw(st.sampled_from(["  - ", "    - "]))
    for step in RUNBOOK:
        step = dict(step)
        if w.draw(st.booleans()) and "reversible" not in step:
            step["reversible"] = False  # a default written out
        run = " ".join(step["run"]) if w.draw(st.booleans()) else step["run"]
        step["run"] = run
        if w.draw(st.booleans()):
            def value(v):
                return "[" + ", ".join(json.dumps(x) for x in v) + "]" if isinstance(v, list) else (
                    str(v).lower() if isinstance(v, bool) else json.dumps(v) if isinstance(v, str) else str(v))
            w.add(owner, w.trailing(dash + "{" + ", ".join(f"{k}: {value(v)}" for k, v in step.items()) + "}"))
        else:
            pad = " " * len(dash)
            for i, (k, v) in enumerate(step.items()):
                text = json.dumps(v) if isinstance(v, (list, str)) else str(v).lower() if isinstance(v, bool) else str(v)
                w.add(owner, w.trailing((dash if i == 0 else pad) + f"{k}: {text}"))
        if w.maybe(3):
            w.add(owner, dash.rstrip("- ") + "  " + w.comment())


def _note(w: Writer, note: str) -> None:
    owner = ("top", "handoff_note")
    style = w.draw(st.sampled_from(["plain", "double", "literal", "folded"]))
    words = note.split(" ")
    if style == "plain" and (FLOAT.match(note) or is_plain_string(note) and ": " not in note and " #" not in note):
        w.add(owner, w.trailing(f"handoff_note: {note}"))
    elif style in ("literal", "folded"):
        w.add(owner, w.trailing(f"handoff_note: {'|' if style == 'literal' else '>'}"))
        # Folded: one word group a line (they fold back with spaces); literal: the text
        # is written with its line breaks, so read back with them.
        for chunk in [words[i : i + 4] for i in range(0, len(words), 4)]:
            w.add(owner, "  " + " ".join(chunk))
        w.doc.data["handoff_note"] = (note if style == "folded" else "\n".join(
            " ".join(words[i : i + 4]) for i in range(0, len(words), 4))) + "\n"
        return
    else:
        w.add(owner, w.trailing(f"handoff_note: {json.dumps(note)}"))
    w.doc.data["handoff_note"] = note


@st.composite
def ledgers(draw) -> Doc:
    """A hand-written ledger, its owners, comment tokens and the data it says."""
    w = Writer(draw)
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    fleet = draw(targets(names))
    w.doc.data.update(task="fleet", targets=fleet)
    if w.maybe(2):
        w.add(None, w.comment())
        w.add(None, "# yaml-language-server: $schema=./ledger.schema.json")
    w.gap()
    w.add(("top", "task"), w.trailing("task: fleet"))
    if w.maybe(2):
        w.add(("top", "owner_shift"), w.trailing("owner_shift: 'platform-oncall'"))
    w.add(("top", "started"), w.trailing("started: 2026-09-09T14:00Z"))
    w.gap()
    if w.maybe(2):
        owner = ("top", "invariants")
        w.add(owner, w.trailing("invariants:"))
        dash = w.draw(st.sampled_from(["- ", "  - "]))
        for item in ["never touch more than 2 dbs concurrently", "pause if error_rate_5m > 0.5%"]:
            w.add(owner, w.trailing(dash + (item if w.draw(st.booleans()) else json.dumps(item))))
            if w.maybe(3):
                w.add(owner, "  " + w.comment())
        w.gap()
    tail = draw(st.booleans())  # the runbook after the targets, as people often put it
    if not tail:
        _runbook(w)
        w.gap()
    w.add(("top", "targets"), w.trailing("targets:"))
    for name, target in fleet.items():
        if w.maybe(3):
            w.gap("  ")
        _target(w, name, target)
    w.gap()
    if tail:
        _runbook(w)
        w.gap()
    if w.maybe(2):
        _note(w, draw(st.sampled_from(["Started db-1 at 01:58Z. Do NOT retry link on db-1, it is irreversible.",
                                        "wait for the app team", "1.30"])))
        w.gap()
    if w.maybe(3):
        owner = ("top", "app_team")
        w.add(owner, w.trailing("app_team:"))
        w.add(owner, w.trailing("  contact: 'ops@example.com'"))
        w.add(owner, w.trailing("  since: 1.30"))
        w.gap()
    return w.doc
