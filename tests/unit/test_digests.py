"""engine.host.digests computes with CPython's own hash modules (no OpenSSL load on the
Claude Code hook's path); its digests must be hashlib's, or every stored key (the file
store's snapshots, the hook's facts, a Claude Code session's lease binding) would change."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from engine.host.digests import content_digest, sha256_hex


def test_the_digests_are_hashlibs():
    for data in (b"", b"ledger", "db-18 \u00e9".encode(), bytes(range(256)) * 4099):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
        assert content_digest(data) == hashlib.blake2b(data, digest_size=16).hexdigest()


def test_the_hooks_path_loads_no_openssl():
    code = ("import sys; import engine.host.digests, engine.hooks.facts, engine.lease.binding; "
            "print(sorted(m for m in ('hashlib', '_hashlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
