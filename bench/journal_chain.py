"""Verifying the journal's hash chain against a plain read of the same journal.

    python3 bench/journal_chain.py [RECORDS [ROUNDS]]      # default 1,000,000 records, 3 rounds

A journal of RECORDS sealed records (the shapes a session writes: step output lines,
transitions with a revision, some step_starts) is written once; then, in rotation,
`verify_file` (parse, re-hash every record, check each link and offset) and a plain read
(`json.loads` of every line, what `handoff journal` costs) are timed, and each one's
peak memory is measured in its own child process (ru_maxrss). Both stream the file, so
memory should stay flat; time should be a small multiple of the read, linear in size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import interleaved, row  # noqa: E402
from engine.audit.chain import GENESIS, seal  # noqa: E402
from engine.audit.verify import verify_file  # noqa: E402


def write_journal(path: str, n: int) -> None:
    """n sealed records, each at its true offset, as the engine writes them."""
    prev, offset = GENESIS, 0
    with open(path, "wb", buffering=1 << 20) as fh:
        for i in range(n):
            record = {"ts": "2026-12-01T10:00:00Z", "kind": "log" if i % 10 else "transition", "actor": "agent:s1",
                      "target": f"db-{i % 500:03d}", "msg": f"replication lag {i % 97} ms on db-{i % 500:03d}"}
            if i % 10 == 0:
                record["rev"] = i // 10
            record["seq"] = offset
            prev = seal(record, prev)["chain"]
            line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            fh.write(line)
            offset += len(line)


def plain_read(path: str) -> int:
    """What a reader that checks nothing costs: every line parsed."""
    count = 0
    with open(path, "rb") as fh:
        for raw in fh:
            json.loads(raw)
            count += 1
    return count


def peak_kib(what: str, path: str) -> int:
    """Peak RSS (KiB) of a child that only does `what` on the journal."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r}); "
            "import resource; from bench.journal_chain import plain_read; from engine.audit.verify import verify_file; "
            f"r = {'verify_file' if what == 'verify' else 'plain_read'}({path!r}); "
            "assert (r.ok if hasattr(r, 'ok') else r); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ledger.yaml.journal.jsonl")
        write_journal(path, n)
        size = os.path.getsize(path)
        assert verify_file(path).ok
        times = interleaved({"verify": (lambda: verify_file(path), None), "read": (lambda: plain_read(path), None)}, runs=rounds)
        print(f"journal of {n:,} records, {size / 2**20:.0f} MiB")
        print(row(f"verify_file, {n:,} records (vs json.loads of every line)", times["verify"], times["read"]))
        print(f"{'records verified per second':<58} {n / times['verify']:,.0f}")
        verify_mem, read_mem = peak_kib("verify", path), peak_kib("read", path)
        print(f"{'peak memory, verify vs plain read':<58} {verify_mem / 1024:9.1f} MiB vs {read_mem / 1024:9.1f} MiB  "
              f"ours/theirs {verify_mem / read_mem:6.3f}")


if __name__ == "__main__":
    main()
