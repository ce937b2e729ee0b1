"""`handoff report -o FILE` where FILE cannot be created (its folder does not exist, a
a file where the folder should be): one line naming the file and what to do, exit 2 as for a FILE
that exists, never a Python traceback."""

from __future__ import annotations

import pytest

from tests.conftest import handoff


@pytest.mark.parametrize("fmt", ["csv", "json", "html"])
def test_report_into_a_missing_folder_is_one_line(fleet, tmp_path, fmt):
    assert handoff("approve", fleet, "db-1", "--yes", "--as", "bob").returncode == 0
    out = tmp_path / "no-such-folder" / f"report.{fmt}"
    result = handoff("report", fleet, "--format", fmt, "-o", out)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and str(out.parent) in result.stderr, result.stderr
    assert not out.parent.exists()


def test_report_where_a_file_stands_for_the_folder_is_one_line(fleet, tmp_path):
    (tmp_path / "plain").write_text("x")
    out = tmp_path / "plain" / "report.csv"
    result = handoff("report", fleet, "-o", out)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2 and "Not a directory" in result.stderr and "nothing was written" in result.stderr, result.stderr
