"""`engine.host.files.read_capped`: what `fh.read(limit + 1)` gives, without a limit-sized buffer."""

from __future__ import annotations

import os

import pytest

from engine.host import files
from engine.host.files import read_capped


@pytest.mark.parametrize("size", [0, 1, 99, 100, 101, 5000])
def test_reads_what_read_limit_plus_one_reads(tmp_path, size):
    path = tmp_path / "ledger.yaml"
    path.write_bytes(bytes(range(256)) * (size // 256) + bytes(size % 256))
    with open(path, "rb") as fh:
        expected = fh.read(101)
    with open(path, "rb") as fh:
        assert read_capped(fh, 100) == expected


def test_a_file_that_grew_after_its_size_was_read_is_read_on_to_the_limit(tmp_path, monkeypatch):
    """The size is only a first guess: a file appended to between fstat and read is read
    on, so a file over the limit is never taken for one under it."""
    path = tmp_path / "ledger.yaml"
    path.write_bytes(b"x" * 300)
    real_fstat = os.fstat

    def stale(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 10,
                               st.st_atime, st.st_mtime, st.st_ctime))

    monkeypatch.setattr(files.os, "fstat", stale)
    with open(path, "rb") as fh:
        assert read_capped(fh, 200) == b"x" * 201  # over the limit: the caller refuses it
    with open(path, "rb") as fh:
        assert read_capped(fh, 1000) == b"x" * 300  # under it: all of it
