"""No secret in clear: a corpus of real secret shapes, all masked, and harmless look-alikes, none touched."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from engine.audit.redact import MASK, RULES, Redactor, redact
from engine.session.runner import run_step
from engine.session.steps import _why

HEX64 = "0123456789abcdef" * 4
ALNUM36 = "abcdefghijklmnopqrstuvwxyz0123456789"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvbmNhbGwifQ.c2lnbmF0dXJlLXBhcnQ"

# (text, the secret that must not survive)
SHAPES = [
    ('{\\"password\\": \\"EscJson1\\"}', "EscJson1"),
    ("DB_PASS=DbPass2x", "DbPass2x"),
    ("passphrase=Phrase3x", "Phrase3x"),
    ("Server=db;Uid=sa;Pwd=ConnPwd4;", "ConnPwd4"),
    ("mysql -uroot -pMyPw5x app", "MyPw5x"),
    ("sshpass -p SshPw6x ssh deploy@host", "SshPw6x"),
    ("'password' => 'PhpPw7x',", "PhpPw7x"),
    ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&ss=b&sig=AbCd%2BEf0123456789xyz%3D", "AbCd%2BEf0123456789xyz%3D"),
    ("db.internal:5432:app:admin:PgPassLine9", "PgPassLine9"),
    ("PGPASSWORD PgNoEq10 psql -h db", "PgNoEq10"),
    ("github_pat_11AAAAAAA0123456789_abcdefxyz0123456789ZZZZ", "github_pat_11AAAAAAA0123456789"),  # no "gh" in it
    ("token hvs.CAESIJ1234567890abcdefghijABCDEFGHIJ", "hvs.CAESIJ1234567890abcdefghij"),
    (f"publishing with npm_{ALNUM36} now", f"npm_{ALNUM36}"),
    (f"DIGITALOCEAN_ACCESS_TOKEN dop_v1_{HEX64}", f"dop_v1_{HEX64}"),
    ("grafana glsa_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345_0a1b2c3d", "glsa_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"),
    ("Generated password:\n        NextLine16", "NextLine16"),
    ('"password":\n        "NextLineJson17"', "NextLineJson17"),
    ("token=" + "A" * 1500 + "TailSecret18", "TailSecret18"),
    ('{"password": "x-Json-Pw"}', "x-Json-Pw"),
    ("pg_dump --password FlagPw1 app", "FlagPw1"),
    ("curl -H 'Authorization: Basic dXNlcjpCYXNpY1B3' https://h", "dXNlcjpCYXNpY1B3"),
    ("X-Api-Key: key-HeaderKey42", "key-HeaderKey42"),
    ("redis://:RedisPw8@cache:6379/0", "RedisPw8"),
    ("token glpat-AbCdEfGhIjKlMnOpQrSt", "glpat-AbCdEfGhIjKlMnOpQrSt"),
    ("key AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM", "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM"),
    ('PGPASSWORD="two words" psql', "two words"),
    ("psql: FATAL: password=Hunter2Leak", "Hunter2Leak"),
    ("connected postgresql://app:VerifyPw9@db/app", "VerifyPw9"),
    ("gh auth: ghp_" + ALNUM36, "ghp_" + ALNUM36),
    ("xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("AKIAIOSFODNN7EXAMPLE in the log", "AKIAIOSFODNN7EXAMPLE"),
    (f"jwt {JWT}", JWT),
    ("ANTHROPIC sk-ant-api03-abcdefghijklmnopqrstuv", "sk-ant-api03-abcdefghijklmnopqrstuv"),
    ("Bearer abcdefgh12345678.xyz", "abcdefgh12345678.xyz"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0B"),
    ("client_secret: CliSec36x", "CliSec36x"),
    ("export MYSQL_PWD=MyPwd37x", "MyPwd37x"),
    ("vault login --token TokFlag38", "TokFlag38"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("mysqldump -u app -pDumpPw40 db", "DumpPw40"),
    ("sshpass -pInlinePw41 scp f host:", "InlinePw41"),
    ("ENV PGPASSWORD EnvPw42", "EnvPw42"),
    ('"password" => "RubyPw43"', "RubyPw43"),
    ('api_key: "Api Key 44 with spaces"', "Api Key 44"),
    ("*:*:*:replicator:StarPw45", "StarPw45"),
]

LOOK_ALIKES = [
    "tokens: 5000", "PWD=/home/oncall", "bypass=1", "passed: 12, failed: 0", "mysql -h db.internal -P 3306 app",
    "sshpass is not installed", "PASSWORD is required", "design=big", "12:30:00", "2001:db8:85a3:0:0:8a2e:370:7334",
    "fe80::1:2:3:4", "fe80:1234:5678:9abc:def0:1:2:3", "npm_config_cache=/tmp/npm", "see hvs.txt", "dop_v1_notes.md", "glsa_report.pdf",
    "github_pat_ rotation is due", "ghost_user", "task-runner started", "AKIA", "the token count is 5", "secrets: 3",
    "passwd file: /etc/passwd", "pg_hba.conf: host all all 10.0.0.0/8 md5", "localhost:5432", "error_rate_5m: 0.3",
    "checkpoint: 0/9A3F2C10", "https://example.com/path?sv=2022&sp=r", "docker run -p 8080:80 nginx",
    "mysql -e 'select 1' -P3306", "ssh -p 2222 host", "user: admin", "vault version v1.15", "npm install --save-dev jest",
    "Grafana glsa tokens are rotated", "DB_PASSING_SCORE=3", "compass=north", "signature=verified",
    "db-18 is replicating, lag 2.1s", "2026-12-01T09:00:00Z: step link started", "kubectl --context=prod-euw1 get nodes",
    "Password rotation is due on Friday",
]


@pytest.mark.parametrize("text, secret", SHAPES, ids=range(len(SHAPES)))
def test_every_shape_is_masked(text: str, secret: str) -> None:
    """The secret is gone, MASK is there, and `find` names a rule (a probe refuses such output)."""
    out = Redactor().text(text)
    assert secret not in out and MASK in out, out
    assert Redactor().find(text) is not None


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_no_look_alike_is_masked(text: str) -> None:
    assert Redactor().text(text) == text
    assert Redactor().find(text) is None


def test_the_corpus_is_big_enough() -> None:
    assert len(SHAPES) >= 40 and len(LOOK_ALIKES) >= 40


def test_every_rule_is_met_by_the_corpus() -> None:
    """Rules are compiled where a text first holds one of their triggers: each is used (so
    compiled, and seen to match) by some shape here, never first in production."""
    matched = {Redactor().find(text) for text, _secret in SHAPES}
    assert {rule.name for rule in RULES} - matched == set()


def test_a_secret_on_the_line_after_its_key_never_reaches_a_reason(tmp_path: Path) -> None:
    """A real step prints its key and, on the next line, the secret, then fails: the tail and the reason hold no secret."""
    script = tmp_path / "leak.py"
    script.write_text("import sys\nprint('x' * 5000)\nprint('Generated password:')\nprint('    LeakNext99')\nsys.exit(3)\n")
    result = run_step([sys.executable, str(script)], timeout=30, cwd=str(tmp_path), tail_bytes=30)
    assert "LeakNext99" not in result.output_tail
    why = _why(result)
    assert why.startswith("exit 3: ") and "LeakNext99" not in why and MASK in why
    # The reason is cut from masked output even when the tail came unmasked (a result from elsewhere).
    raw = dataclasses.replace(result, output_tail="Generated password:\n    LeakNext99\n")
    assert "LeakNext99" not in _why(raw) and MASK in _why(raw)


def test_redaction_stays_linear_on_hostile_text() -> None:
    """Long runs of keywords and prefixes are masked in one pass each (a quadratic rule would take minutes here)."""
    for hostile in ["password=" * 20000, '"password": "' * 20000, "sshpass -p" * 20000, "a:1:b:c:" * 20000,
                    "mysql " + "-p" * 50000, "github_pat_" * 20000]:
        assert isinstance(redact(hostile), str)


# An output tail that starts inside a key: no BEGIN line, only the body and its END.
HEADLESS_KEY = "tail of the step's output\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----"


def _fleet_with(text: str, where: str) -> dict:
    """A status-like document of many targets with `text` put in one place."""
    targets = {f"db-{i}": {"state": "done", "reason": None, "checkpoint": f"0/{i:08X}", "evidence": ["ok"]} for i in range(50)}
    if where == "a whole value":
        targets["db-7"]["reason"] = text
    elif where == "inside a value":
        targets["db-7"]["reason"] = f"check printed:\n{text}\nexit 1"
    elif where == "in a list":
        targets["db-7"]["evidence"] = ["first line", f"{text}\nmore output"]
    elif where == "top level":
        return {"note": text, "targets": targets}
    return {"note": "all quiet", "targets": targets}


@pytest.mark.parametrize("where", ["a whole value", "inside a value", "in a list", "top level"])
def test_a_document_is_masked_as_each_of_its_strings_is(where: str) -> None:
    """`document` (status --json of 10,000 targets) looks at every string once, joined: each
    shape, wherever it sits, is masked exactly as `value` masks it string by string; a
    document with only look-alikes comes back as the very object it was."""
    redactor = Redactor()
    for text, secret in [*SHAPES, (HEADLESS_KEY, HEADLESS_KEY.splitlines()[1])]:
        data = _fleet_with(text, where)
        out = redactor.document(data)
        assert out == redactor.value(data) and secret not in repr(out), (where, text)
    for text in LOOK_ALIKES:
        data = _fleet_with(text, where)
        assert redactor.document(data) is data, (where, text)
