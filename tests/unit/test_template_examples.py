"""Every commented example command in the `handoff init` templates parses and passes `check --strict` once uncommented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.codec import strict
from engine.errors import LedgerInvalid
from tests.conftest import ROOT

TEMPLATES = sorted((ROOT / "ledgers" / "templates").glob("*.yaml"))
EXAMPLE = re.compile(r"^(?P<indent>\s*)# (?P<key>run|check|verify|webhook): (?P<rest>.*)$")


def handoff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], capture_output=True, text=True, timeout=60)


def uncomment(text: str) -> tuple[str, int]:
    """The template with each `# key: ...` example (and its deeper-indented `#` continuation lines)
    put in place of the live `key:` line of the same block; and how many examples there were."""
    lines = text.split("\n")
    out: list[str] = []
    pending: dict[tuple[str, str], list[str]] = {}  # (indent, key) -> the example's lines, until its live line comes
    count, i = 0, 0
    while i < len(lines):
        m = EXAMPLE.match(lines[i])
        if m:
            indent, key = m.group("indent"), m.group("key")
            example = [f"{indent}{key}: {m.group('rest')}"]
            i += 1
            while i < len(lines) and re.match(rf"^{indent}#\s{{3,}}\S", lines[i]):
                example.append(indent + " " + lines[i][len(indent) + 1:])
                i += 1
            pending[(indent, key)] = example
            count += 1
            continue
        line = lines[i]
        live = re.match(r"^(\s*)(?:- )?(run|check|verify|webhook): ", line)
        if live:
            indent = live.group(1) + ("  " if line.lstrip().startswith("- ") else "")
            example = pending.pop((indent, live.group(2)), None) or pending.pop((live.group(1), live.group(2)), None)
            if example is not None:
                if line.lstrip().startswith("- "):
                    example[0] = live.group(1) + "- " + example[0].lstrip()
                out.extend(example)
                i += 1
                continue
        out.append(line)
        i += 1
    assert not pending, f"examples with no live line to replace: {sorted(pending)}"
    return "\n".join(out), count


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.stem)
def test_every_example_parses_and_passes_check_strict_once_uncommented(template: Path, tmp_path: Path) -> None:
    """Uncommented, each template is valid YAML, has no placeholder left, and `check --strict` exits 0."""
    text, count = uncomment(template.read_text(encoding="utf-8"))
    if template.stem != "blank":
        assert count >= 8, f"{template.name}: only {count} examples"
    strict.load(text, str(template))  # raises with file:line:col if an example is not YAML
    assert "TEMPLATE PLACEHOLDER" not in text or template.stem == "blank", "a placeholder has no example to replace it"
    path = tmp_path / "ledger.yaml"
    path.write_text(text, encoding="utf-8")
    result = handoff("check", "--strict", str(path))
    if template.stem != "blank":
        assert result.returncode == 0, result.stdout + result.stderr


def test_an_unquoted_brace_in_a_flow_list_says_to_quote_it(tmp_path: Path) -> None:
    """The parser's message names the fix; the file is not changed by `check`."""
    path = tmp_path / "ledger.yaml"
    text = (ROOT / "ledgers" / "templates" / "k8s-rollout.yaml").read_text(encoding="utf-8").replace(
        'run: ["{python}", "-c", "import sys; sys.exit(sys.argv[1])", "TEMPLATE PLACEHOLDER: replace the run of step preflight',
        'run: [pluto, detect-all-in-cluster, --kube-context={target}]\n      x: ["', 1)
    path.write_text(text, encoding="utf-8")
    before = path.read_bytes()
    result = handoff("check", "--strict", str(path))
    line = next(n for n, l in enumerate(text.split("\n"), 1) if "--kube-context={target}]" in l)
    assert result.returncode == 2
    assert f"{path}:{line}:" in result.stderr
    assert "quote arguments that contain `{...}`" in result.stderr
    assert path.read_bytes() == before
    with pytest.raises(LedgerInvalid, match="quote arguments"):
        strict.load("run: [a, --x={target}]\n", "x.yaml")
    with pytest.raises(LedgerInvalid, match="fix the YAML syntax there"):
        strict.load('run: [a, "--x={target}", ]]\n', "x.yaml")  # quoted: another mistake, the usual advice


def test_the_k8s_template_and_init_point_to_the_shipped_examples(tmp_path: Path) -> None:
    head = (ROOT / "ledgers" / "templates" / "k8s-rollout.yaml").read_text(encoding="utf-8").split("task:")[0]
    assert "ledgers/k8s-rollout.yaml" in head
    result = handoff("init", str(tmp_path / "l.yaml"), "--template", "k8s-rollout")
    assert result.returncode == 0, result.stderr
    assert str(ROOT / "ledgers") in result.stdout and "k8s-rollout.yaml" in result.stdout
