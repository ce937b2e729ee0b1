"""handoff-tui over a real SSH connection: the test's own sshd on 127.0.0.1, ssh -tt inside tmux at 80x24.

The remote side runs this checkout's `handoff-tui` as bob; keys sent through
tmux and ssh approve db-18 (typing its name) and edit the note, and the ledger
records the approval with bob and the login user. A missing sshd fails the test
(tests/run.sh installs openssh-server); it never skips.
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT, approve_db18_and_edit_note, check_db18_approved_with_note, demo_with_db18_awaiting

pytestmark = pytest.mark.e2e

SSHD = "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An sshd on 127.0.0.1 that lets this user in with a fresh key; yields (port, private key)."""
    if not os.path.exists(SSHD):
        pytest.fail(f"{SSHD} is missing: install openssh-server (tests/run.sh does it) to run the SSH test")
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: install openssh-client (tests/run.sh does it)")
    folder = tmp_path / "sshd"
    folder.mkdir()
    host_key, user_key = folder / "host_ed25519", folder / "user_ed25519"
    for key in (host_key, user_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    authorized = folder / "authorized_keys"
    authorized.write_text(user_key.with_suffix(".pub").read_text())
    authorized.chmod(0o600)
    # sshd insists on its privilege-separation folder even when it never uses it.
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    port = free_port()
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized}",
        f"PidFile {folder / 'sshd.pid'}",
        "StrictModes no",
        "UsePAM no",
        "PermitRootLogin yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PrintMotd no",
        "PrintLastLog no",
        "LogLevel ERROR",
        "",
    ]))
    log = open(folder / "sshd.log", "wb")
    proc = subprocess.Popen([SSHD, "-D", "-f", str(config), "-e"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                pytest.fail(f"sshd exited with {proc.returncode}: {(folder / 'sshd.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"sshd never listened on {port}: {(folder / 'sshd.log').read_text()}")
                time.sleep(0.05)
        yield port, user_key
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_approve_and_edit_note_over_ssh(sshd, tmux, tmp_path: Path) -> None:
    """Through ssh -tt to the test's own sshd, send-keys approve db-18 and edit the note; the ledger records both."""
    port, key = sshd
    ledger = demo_with_db18_awaiting(tmp_path / "fleet")
    state = tmp_path / "state"
    remote = " ".join([
        "cd", shlex.quote(str(ROOT)), "&&",
        "env", "TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", f"XDG_STATE_HOME={shlex.quote(str(state))}",
        shlex.quote(sys.executable), "-m", "tui.main", shlex.quote(str(ledger)), "--as", "bob",
    ])
    tmux.start(["ssh", "-tt", "-p", str(port), "-i", str(key), "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes",
                f"{getpass.getuser()}@127.0.0.1", remote])
    approve_db18_and_edit_note(tmux, "bob")
    check_db18_approved_with_note(ledger, "bob")
