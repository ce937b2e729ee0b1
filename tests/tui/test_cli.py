"""The `handoff-tui` command: bad input is one line on stderr and exit 2, before any screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.main import main, prepare_demo


def test_missing_ledger_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file: `handoff-tui: ...` on one line, exit 2."""
    code = main([str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("handoff-tui: ") and err.count("\n") == 1


def test_invalid_ledger_says_file_line_col(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid file: the message carries file:line:col."""
    bad = tmp_path / "ledger.yaml"
    bad.write_text("task: x\ntargets:\n  a: {state: nonsense}\n", encoding="utf-8")
    code = main([str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{bad}:" in err and err.count("\n") == 1


def test_unknown_theme_exits_2(ledger_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown --theme is a usage error, not a crash."""
    assert main([str(ledger_path), "--theme", "no-such-theme"]) == 2
    assert "unknown theme" in capsys.readouterr().err


def test_ledger_or_demo_required(capsys: pytest.CaptureFixture[str]) -> None:
    """No arguments: argparse's usage error (exit 2)."""
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


def test_demo_copies_the_fleet(tmp_path: Path) -> None:
    """--demo DIR copies ledgers/demo into DIR and refuses to overwrite a ledger there."""
    path = prepare_demo(str(tmp_path / "demo"))
    assert path.is_file() and (path.parent / "sim.py").is_file()
    with pytest.raises(Exception, match="already exists"):
        prepare_demo(str(tmp_path / "demo"))
