"""Reading a file whole, up to a limit.

`fh.read(limit + 1)` asks Python for a buffer of the limit's size (64 MiB for a ledger)
and fills fresh pages of it: reading a 1.6 MB ledger that way took ten times as long as
reading its size. `read_capped` asks for the size the file has, and reads on only if the
file grew meanwhile.
"""

from __future__ import annotations

import os
from typing import BinaryIO


def read_capped(fh: BinaryIO, limit: int) -> bytes:
    """The file's bytes from where `fh` stands, at most `limit + 1` of them (one more than
    the limit, so a caller can tell a file over it), as `fh.read(limit + 1)` gives."""
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError:
        size = limit
    raw = fh.read(min(size, limit) + 1)
    if size < len(raw) <= limit:  # it grew since the size was read: the rest, up to the limit
        raw += fh.read(limit + 1 - len(raw))
    return raw
