#!/usr/bin/env bash
# Install everything the test suite needs on a fresh clone, then run it.
# Used by the README's test command and by .ci/run. Fails (never skips) when a
# needed service or package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the end-to-end tests drive: a real terminal and a real sshd.
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
# ssh, and ssh-keygen, which signs and verifies approvals (tests/unit/test_verified_approvers.py).
{ command -v ssh && command -v ssh-keygen; } >/dev/null 2>&1 || need+=(openssh-client)
# Headless Chromium opens the HTML audit report (tests/unit/test_audit_report.py).
[ -x /usr/bin/chromium ] || need+=(chromium)
# Node.js 18 or later runs the real Claude Code CLI the hook tests drive.
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 18 ] || ! command -v npm >/dev/null 2>&1; then need+=(nodejs npm); fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "installing Debian packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# PostgreSQL: the integration tests use the real server; start it if it is installed
# but stopped, and fail (never skip) if it cannot be had.
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    for _ in $(seq 1 20); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
  fi
  pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL is not running on 127.0.0.1:5432; the tests need it" >&2; exit 1; }
fi

# The real Claude Code CLI, pinned (tests/e2e/test_claude_code.py), in a folder of this checkout.
CLAUDE_CODE_VERSION=2.1.197
if [ "$(.cache/claude-code/node_modules/.bin/claude --version 2>/dev/null | cut -d' ' -f1)" != "$CLAUDE_CODE_VERSION" ]; then
  echo "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION (npm)"
  mkdir -p .cache/claude-code
  npm install --silent --no-audit --no-fund --prefix .cache/claude-code "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >/dev/null
fi
.cache/claude-code/node_modules/.bin/claude --version >/dev/null || { echo "Claude Code could not be installed; the hook tests need it" >&2; exit 1; }

# The system's Python when it is 3.11 or later and can make a venv: Debian's is an
# optimised static build: Python-bound tests run about a quarter faster on it than on
# pyenv's shared-library build, the first python3 on this machine's PATH (the whole suite
# 6%: it also waits on servers and timers). Any python3 of 3.11 or later works the same.
py=python3
for candidate in /usr/bin/python3 /usr/local/bin/python3; do
  if [ -x "$candidate" ] && "$candidate" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    py=$candidate
    break
  fi
done
"$py" -m venv .venv
# The suite's packages are installed by uv: pip asks the index about each of ~100 packages one
# after another (26 s here), uv asks in parallel (5 s with an empty cache, 2 with a warm one).
# Both take tests/constraints.txt: the versions the suite last passed with, so either resolver
# installs the same set (left free, uv and pip choose different pytest and syrupy releases).
# Editable in setuptools' compat mode: a plain path in a .pth file. The default mode's import
# finder is loaded by every Python process the venv starts: 11 ms of the 21 a bare
# `python -c pass` took here, in each of the ~3,800 processes the suite starts, and it
# made bench/'s `python -c pass` baseline twice what an installed handoff-tui pays.
# setuptools calls compat mode transitional: once a release drops it, the default mode is used.
# uv writes no bytecode unless asked, where pip compiles what it installs: under
# PYTHONDONTWRITEBYTECODE=1 every process then compiled the modules no collection imports
# (slack_sdk, httpcore, watchfiles, half of textual and rich): importing
# slack_sdk.web took 120 ms here against 70 compiled, httpcore 83 against 51. tests/slack took
# 30-33 s against 28.5-29.5. `--compile-bytecode` compiles all of site-packages, as pip leaves it.
.venv/bin/python -m pip install -q --upgrade pip 'uv>=0.9,<1' >/dev/null || true
install() {  # install ARGS...: uv where it could be had, else pip
  if [ -x .venv/bin/uv ]; then
    VIRTUAL_ENV="$PWD/.venv" .venv/bin/uv pip install -q --compile-bytecode "$@"
  else
    .venv/bin/python -m pip install -q "$@"
  fi
}
if ! install -c tests/constraints.txt -e '.[test]' --config-settings editable_mode=compat; then
  echo "tests/run.sh: setuptools refused editable_mode=compat; installing in its default mode" >&2
  install -c tests/constraints.txt -e '.[test]'
fi

# Static checks first (configured in pyproject.toml): a lint or type error fails the run.
.venv/bin/ruff check engine tui || { echo "CI: ruff check engine tui failed (see above)" >&2; exit 1; }
# mypy (one core, ~15 s with no cache) runs beside a collection that writes pytest's
# assert-rewritten test modules into tests/**/__pycache__. Under PYTHONDONTWRITEBYTECODE=1
# (set on this machine and in many images) nothing writes them, so every xdist worker would
# rewrite all ~200 test modules again at its start: 10 s of CPU a worker, 4.6 s when they are
# written. Only this one collection writes bytecode; the run itself keeps the caller's setting.
mypy_out=$(mktemp)
.venv/bin/mypy >"$mypy_out" 2>&1 &
mypy_pid=$!
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider >/dev/null 2>&1 || true  # errors: the run below shows them
if ! wait "$mypy_pid"; then
  cat "$mypy_out"; rm -f "$mypy_out"
  echo "CI: mypy on engine/ failed (see above)" >&2; exit 1
fi
cat "$mypy_out"; rm -f "$mypy_out"

# Screens are compared at a fixed size and without colour surprises from the caller.
export COLUMNS=120 LINES=40 TERM=xterm-256color
unset NO_COLOR || true
# In parallel (pytest-xdist): tests that share a server or a file outside their tmp_path
# carry an xdist group (tests/conftest.py) and run one after another on one worker.
# Two workers per core and one more (at most 8): much of the tests' time is waiting on servers,
# timers and the processes they start (on 2 cores, 5 workers: 408 s of tests where 4 took 456).
# HANDOFF_TEST_WORKERS=N sets the number; 0 runs everything in this process, one test at a time.
cores=$(nproc 2>/dev/null || echo 1)
workers=${HANDOFF_TEST_WORKERS:-$(( cores * 2 + 1 > 8 ? 8 : cores * 2 + 1 ))}
if [ "$workers" = "0" ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadgroup "$@"
