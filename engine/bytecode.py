"""The engine's own modules stay byte-compiled even under PYTHONDONTWRITEBYTECODE.

Many container images and this project's CI set PYTHONDONTWRITEBYTECODE=1. With an
editable install (or a checkout on PYTHONPATH) nothing then ever writes the engine's
`.pyc` files, and every `handoff` process, every Claude Code hook call included,
compiles the whole engine from source again (+0.1-0.2 s CPU each, issue 27). So the
engine's packages (engine/ and tui/ beside it) get a finder whose loader writes their
bytecode anyway, exactly as Python does by default: checked against the source's
mtime and size, written atomically into `__pycache__`, silently skipped where the
folder is not writable. Nothing else in the process is affected. HANDOFF_WRITE_BYTECODE=0
keeps the interpreter's setting for the engine too.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)


class _WritingLoader(SourceFileLoader):
    """SourceFileLoader that caches bytecode whatever sys.dont_write_bytecode says."""

    def get_code(self, fullname):  # noqa: ANN001, ANN201 - importlib's signature
        saved = sys.dont_write_bytecode
        sys.dont_write_bytecode = False  # read by get_code to decide whether to write the .pyc
        try:
            return super().get_code(fullname)
        finally:
            sys.dont_write_bytecode = saved


def _folders(root: str):
    for folder, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d != "__pycache__" and not d.startswith(".")]
        if "__init__.py" in files:
            yield folder


def install(package_dir: str) -> None:
    """Let the packages at and beside `package_dir` write their bytecode (see above)."""
    if not sys.dont_write_bytecode or os.environ.get("HANDOFF_WRITE_BYTECODE") == "0":
        return
    parent = os.path.dirname(package_dir)
    for root in (package_dir, os.path.join(parent, "tui")):
        for folder in _folders(root):
            if folder not in sys.path_importer_cache or folder == package_dir:
                sys.path_importer_cache[folder] = FileFinder(folder, (ExtensionFileLoader, EXTENSION_SUFFIXES),
                                                             (_WritingLoader, SOURCE_SUFFIXES),
                                                             (SourcelessFileLoader, BYTECODE_SUFFIXES))
