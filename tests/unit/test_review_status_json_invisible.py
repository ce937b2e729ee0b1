"""Review (tui): `handoff status --json` writes invisible and bidi characters of the argv raw.

The README's approval path without a TTY is: read `handoff status --json` (each awaiting command's
argv, checkpoint and hash), then `handoff approve --expect-hash H`. The plain `handoff status`
escapes every character in engine.codec.textsafe.CONTROL_CODES (`\\u202e`, `\\U000e002d`, `\\x9b`),
but `--json` (orjson, UTF-8 as it is) only escapes C0: a bidi override, tag characters that spell
an invisible ` --force`, or a C1 CSI (U+009B) reach the terminal as they are, so the person who
reads the JSON on a terminal sees an argv other than the one the hash binds. JSON's own `\\uXXXX`
escapes would keep the value byte-for-byte the same for programs (json.loads gives the same
strings) while showing the person every character.

Goes in tests/unit/ (uses tests.conftest's handoff and cli_env).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from engine.codec.textsafe import CONTROL_CODES
from tests.conftest import cli_env, handoff

TAGS = "".join(chr(0xE0000 + ord(c)) for c in " --force")  # invisible ASCII copies
ARGV = ["/usr/local/sbin/fleet-cutover", "--cluster={target}" + TAGS, "--note=\u202eepyt-yrd\u202c", "a\u009b2Jb"]


def _ledger(tmp_path: Path) -> Path:
    data = {"task": "t",
            "targets": {"db-01": {"state": "awaiting_approval", "awaiting": "cutover", "awaiting_by": "agent"}},
            "runbook": {"steps": [{"name": "cutover", "from": "verified", "to": "done", "reversible": False,
                                   "run": ARGV}]}}
    path = tmp_path / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_status_json_spells_out_every_invisible_character_of_the_command(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    out = handoff("status", "--json", ledger, env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    (awaiting,) = data["awaiting"]
    assert awaiting["argv"][1] == "--cluster=db-01" + TAGS  # the value itself is right...
    raw = sorted({f"U+{ord(c):04X}" for c in out.stdout if ord(c) in CONTROL_CODES and c != "\n"})
    # ...but the text a person reads on the terminal carries them raw (the plain status escapes all of them).
    assert raw == [], f"handoff status --json wrote these characters raw to the terminal: {raw}"
    assert ledger.read_bytes() == before


def test_note_json_spells_out_a_bidi_override_in_the_note(tmp_path: Path) -> None:
    """The same for `handoff note --json` (json.dumps(..., ensure_ascii=False)): the note that says
    what must not be touched reads backwards on a bidi terminal."""
    ledger = _ledger(tmp_path)
    ledger.write_text(ledger.read_text(encoding="utf-8") + "handoff_note: \"do NOT cut over \\u202e81-bd\\u202c yet\"\n",
                      encoding="utf-8")
    out = handoff("note", ledger, "--json", env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["note"] == "do NOT cut over \u202e81-bd\u202c yet"
    raw = sorted({f"U+{ord(c):04X}" for c in out.stdout if ord(c) in CONTROL_CODES and c != "\n"})
    assert raw == [], f"handoff note --json wrote these characters raw to the terminal: {raw}"


def test_escaped_json_reads_back_the_same_and_shows_nothing_raw() -> None:
    """`engine.codec.jsontext.escaped`: each character a terminal must not get raw becomes its JSON
    escape (a surrogate pair past U+FFFF), and a program reads back the very same value."""
    import json

    from engine.codec.jsontext import escaped, json_line
    from engine.codec.textsafe import CONTROL_CODES

    value = {"t\u202e": ["db-18\u200b", "\x7f\x9b", "tag\U000e0041", "Zürich 数据库 😀", "\u180b"]}
    text = json_line(value)
    assert json.loads(text) == value
    assert not [c for c in text if ord(c) in CONTROL_CODES]
    assert "\\udb40\\udc41" in text and "Zürich 数据库 😀" in text  # U+E0041 as UTF-16; ordinary text as it is
    assert escaped('{"a":"b"}') == '{"a":"b"}'
