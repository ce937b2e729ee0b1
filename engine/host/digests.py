"""SHA-256 and BLAKE2b from CPython's own hash modules, not OpenSSL's.

`import hashlib` loads libcrypto: 3 ms of every process that imports it, measured here
side by side, which a Claude Code hook would pay on every tool call for two short
digests. The digests are the same whichever library computes them
(tests/unit/test_digests.py); a Python built without these modules uses hashlib's.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - CPython always has it
    from hashlib import blake2b
try:
    from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12 and later
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11
    except ImportError:  # pragma: no cover - a build without them
        from hashlib import sha256


def content_digest(raw: bytes) -> str:
    """The hash a ledger's exact bytes are known by (the file store's snapshots, the parse
    cache, the hook's facts): BLAKE2b, 16 bytes, in hex."""
    return blake2b(raw, digest_size=16).hexdigest()


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data`, in hex."""
    return sha256(data).hexdigest()
