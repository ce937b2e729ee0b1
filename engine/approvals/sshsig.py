"""OpenSSH signatures over an approval (`ssh-keygen -Y sign/verify`, namespace
`handoff-approval`).

The payload is canonical JSON (sorted keys, no spaces, ASCII) of what the approval
binds: the ledger's id, the target, the step, the approval hash (command, timeout,
rendered values and checkpoint), the checkpoint, the ledger revision the approver saw,
the time and the approver's name. Signing uses a private key file, or a public key file
whose private half is in the ssh-agent at `SSH_AUTH_SOCK` (with `ssh-add -c` or a FIDO2
`-sk` key a person must confirm or touch). Verification writes the approver's key as an
allowed_signers file in a private temporary folder and never trusts anything else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any

from engine.errors import Refused

NAMESPACE = "handoff-approval"
PRINCIPAL = "approver"  # the allowed_signers file holds one key: the name inside it is ours, not data
FIELDS = ("approver", "at", "checkpoint", "hash", "ledger", "revision", "step", "target")
TIMEOUT = 120.0  # a person may have to confirm (ssh-add -c) or touch a FIDO2 key


class SignatureError(Refused):
    """ssh-keygen could not sign, or is missing; the message says what to do (exit 1)."""

    title = "Cannot sign"


def payload(*, ledger: str, target: str, step: str, hash: str, checkpoint: str | None, revision: int, at: str,
            approver: str) -> str:
    """The canonical text an approval's signature covers."""
    return json.dumps({"approver": approver, "at": at, "checkpoint": checkpoint, "hash": hash, "ledger": ledger,
                       "revision": revision, "step": step, "target": target}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)


def parse_payload(text: str) -> dict[str, Any] | None:
    """The fields of a payload, or None when it is not one this module writes."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict) or tuple(sorted(data)) != FIELDS or payload(**data) != text:
        return None
    return data


def _keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise SignatureError("ssh-keygen is not installed (Debian: apt-get install openssh-client); nothing was approved")
    return found


def sign(text: str, key_file: str) -> str:
    """The armored signature of `text` by `key_file` (a private key, or a public key whose
    private half the ssh-agent holds). Raises SignatureError saying why not."""
    proc = subprocess.run([_keygen(), "-Y", "sign", "-n", NAMESPACE, "-f", key_file], input=text.encode(),
                          capture_output=True, timeout=TIMEOUT)
    if proc.returncode != 0 or b"BEGIN SSH SIGNATURE" not in proc.stdout:
        said = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise SignatureError(f"ssh-keygen could not sign with {key_file}: {said[0][:200]}; nothing was approved")
    return proc.stdout.decode("ascii")


def verify(text: str, sig: str, public_key: str) -> str | None:
    """None when `sig` is `public_key`'s signature of exactly `text`; else why not."""
    key = " ".join(public_key.split()[:2])  # type and base64: a comment is not part of the key
    if not key.startswith(("ssh-", "ecdsa-", "sk-")) or len(key.split()) != 2:
        return f"the approver's ssh_key {public_key[:40]!r} is not an OpenSSH public key line"
    folder = tempfile.mkdtemp(prefix="handoff-sig-")  # mode 0700: nobody else can swap the files
    try:
        signers, sigfile = os.path.join(folder, "allowed_signers"), os.path.join(folder, "sig")
        with open(signers, "w", encoding="ascii") as fh:
            fh.write(f'{PRINCIPAL} namespaces="{NAMESPACE}" {key}\n')
        with open(sigfile, "w", encoding="ascii", errors="replace") as fh:
            fh.write(sig)
        try:
            proc = subprocess.run([_keygen(), "-Y", "verify", "-f", signers, "-I", PRINCIPAL, "-n", NAMESPACE,
                                   "-s", sigfile], input=text.encode(), capture_output=True, timeout=30)
        except SignatureError as err:
            return str(err)
        if proc.returncode != 0:
            said = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            return f"the signature does not verify against the approver's ssh_key ({said[0][:160]})"
        return None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
