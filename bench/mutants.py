"""Hand mutations of critical code, applied by a script (issue 22): does a test catch each?

    python3 bench/mutants.py                 # every mutant in bench/mutant_table.py
    python3 bench/mutants.py spawn-lease ... # only these
    python3 bench/mutants.py --check         # only: is every snippet still in the source?
    python3 bench/mutants.py --exclude tests/unit/test_fences_ --fallback tests/unit/test_fencing.py
                                             # without some tests (a mutant left with none runs the fallback)

The working copy is never edited: the tree (without .git, .venv, caches) is copied to a
temporary folder; each mutant replaces its snippet there, runs its tests there
(`python -m pytest -x -q -p no:cacheprovider ...`, this checkout's interpreter, the copy
first on PYTHONPATH), then puts the file back. First the named tests run once unmutated
(a test failing already would "catch" everything). A snippet no longer found exactly once
is "stale"; a file the table names that moved is found by its snippet. Prints one line
per mutant (caught by which test, or SURVIVED) and the total; exit 1 if any mutant
survived or was stale, 2 if the unmutated tests fail.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mutant_table import MUTANTS, Mutant  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(".git", ".venv", ".cache", "__pycache__", "*.pyc", ".pytest_cache", "*.egg-info",
                              "node_modules")
PYTEST = ("-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist")
SEARCHED = ("engine", "tui")  # where a moved file is looked for


def locate(root: Path, mutant: Mutant) -> tuple[str | None, str]:
    """(the file holding the mutant's snippet exactly once, relative to root; a note) or (None, why it is stale)."""
    named = root / mutant.path
    if named.is_file():
        count = named.read_text("utf-8").count(mutant.find)
        if count == 1:
            return mutant.path, ""
        if count > 1:
            return None, f"the snippet occurs {count} times in {mutant.path}; make it longer"
    found = [p for folder in SEARCHED for p in sorted((root / folder).rglob("*.py"))
             if mutant.find in p.read_text("utf-8")]
    if len(found) == 1 and found[0].read_text("utf-8").count(mutant.find) == 1:
        moved = found[0].relative_to(root).as_posix()
        return moved, f"moved: {mutant.path} -> {moved} (update bench/mutant_table.py)"
    if found:
        return None, f"the snippet is in {len(found)} places ({', '.join(p.relative_to(root).as_posix() for p in found)})"
    return None, f"the snippet is no longer in {mutant.path} (or anywhere under {', '.join(SEARCHED)}): update the table"


def missing_tests(root: Path, mutant: Mutant) -> list[str]:
    """The tests a mutant names that do not exist (a file, or `def name` in it)."""
    out = []
    for test in mutant.tests:
        path, _, node = test.partition("::")
        name = re.sub(r"\[.*\]$", "", node)
        file = root / path
        if not file.is_file() or (name and not re.search(rf"^(async )?def {re.escape(name)}\(", file.read_text("utf-8"), re.M)):
            out.append(test)
    return out


def problems(root: Path = ROOT) -> list[str]:
    """Everything wrong with the table against the source under `root` (empty: up to date)."""
    out = []
    seen = set()
    for m in MUTANTS:
        if m.id in seen:
            out.append(f"{m.id}: the id is used twice")
        seen.add(m.id)
        path, note = locate(root, m)
        if path is None:
            out.append(f"{m.id}: stale: {note}")
        elif note:
            out.append(f"{m.id}: {note}")
        if m.find == m.replace:
            out.append(f"{m.id}: the replacement changes nothing")
        elif path is not None:
            try:  # a mutant that does not even compile would be "caught" by any test
                ast.parse((root / path).read_text("utf-8").replace(m.find, m.replace, 1))
            except SyntaxError as err:
                out.append(f"{m.id}: the mutated {path} does not parse (line {err.lineno}: {err.msg})")
        out += [f"{m.id}: no such test {t}" for t in missing_tests(root, m)]
        if not m.tests:
            out.append(f"{m.id}: names no test")
    return out


def pytest(copy: Path, tests: list[str], env: dict[str, str], timeout: float, *, every: bool = False) -> tuple[int, str]:
    """Run `tests` in the copy (`every`: all of them, not stopping at the first failure)."""
    argv = [a for a in PYTEST if not (every and a == "-x")]
    try:
        done = subprocess.run([sys.executable, *argv, *tests], cwd=copy, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f}s"
    return done.returncode, done.stdout + done.stderr


def catcher(output: str) -> str:
    """The failing tests' names in pytest's -q output."""
    found = re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", output, re.M)
    return ", ".join(name.split("::", 1)[-1] for name in found) if found else "?"


def run_one(copy: Path, m: Mutant, tests: list[str], env: dict[str, str], timeout: float,
            every: bool = False) -> tuple[str, str]:
    """("caught" | "SURVIVED" | "stale" | "broken", detail)."""
    path, note = locate(copy, m)
    if path is None:
        return "stale", note
    if not tests:
        return "SURVIVED", "no test left to run"
    file = copy / path
    original = file.read_text("utf-8")
    file.write_text(original.replace(m.find, m.replace, 1), "utf-8")
    try:
        code, output = pytest(copy, tests, env, timeout, every=every)
    finally:
        file.write_text(original, "utf-8")
    if code == 0:
        return "SURVIVED", f"{len(tests)} test(s) passed with it"
    if code in (4, 5):  # usage error, nothing collected: the table names tests that are not there
        return "broken", output.strip().splitlines()[-1] if output.strip() else f"pytest exit {code}"
    if code == -1:
        return "caught", output
    return "caught", catcher(output) + ("" if code == 1 else f" (pytest exit {code})")


def scratch_copy() -> tuple[Path, dict[str, str]]:
    """The tree copied to a temporary folder, and the environment that runs its code (checked)."""
    base = Path(tempfile.mkdtemp(prefix="handoff-mutants-"))
    copy = base / "repo"
    shutil.copytree(ROOT, copy, ignore=SKIP, symlinks=True)
    # The copy leaves .git out; tests that read git history (an earlier engine, .gitignore) read this checkout's.
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1", "GIT_DIR": str(ROOT / ".git")}
    where = subprocess.run([sys.executable, "-c", "import engine; print(engine.__file__)"], cwd=copy, env=env,
                           capture_output=True, text=True).stdout.strip()
    if not where.startswith(str(copy)):
        raise SystemExit(f"the copy's engine is not the one imported there ({where!r}); nothing was run")
    return copy, env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutant ids (default: all)")
    parser.add_argument("--check", action="store_true", help="only check that the table matches the source")
    parser.add_argument("--exclude", action="append", default=[], metavar="TEXT",
                        help="leave out the tests whose id contains TEXT (e.g. to measure without new tests)")
    parser.add_argument("--fallback", action="append", default=[], metavar="TEST",
                        help="tests to run for a mutant whose own tests were all excluded")
    parser.add_argument("--every-failure", action="store_true",
                        help="run all of a mutant's tests and name every one that fails (are they one-condition tests?)")
    parser.add_argument("--tests", nargs="+", metavar="TEST", help="run these tests for every mutant instead of its own")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the tests")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant's test run (default 900)")
    args = parser.parse_args(argv)
    wrong = problems()
    for line in wrong:
        print(line)
    if args.check:
        print(f"{len(MUTANTS)} mutants, {len(wrong)} problem(s)")
        return 1 if wrong else 0
    unknown = [i for i in args.ids if i not in {m.id for m in MUTANTS}]
    if unknown:
        parser.error(f"no such mutant: {', '.join(unknown)}")
    chosen = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    tests_of = {m.id: list(args.tests) if args.tests else
                [t for t in m.tests if not any(x in t for x in args.exclude)] or list(args.fallback) for m in chosen}
    copy, env = scratch_copy()
    print(f"{len(chosen)} mutants; scratch copy {copy}; python {sys.version.split()[0]}", flush=True)
    try:
        every = list(dict.fromkeys(t for m in chosen for t in tests_of[m.id]))
        if every and not args.no_baseline:
            started = time.monotonic()
            code, output = pytest(copy, every, env, args.timeout * 2)
            if code != 0:
                print(output[-4000:])
                print(f"the {len(every)} tests fail without any mutation (exit {code}); fix that first")
                return 2
            print(f"baseline: {len(every)} tests pass unmutated ({time.monotonic() - started:.0f}s)", flush=True)
        results = []
        for m in chosen:
            started = time.monotonic()
            verdict, detail = run_one(copy, m, tests_of[m.id], env, args.timeout, args.every_failure)
            results.append(verdict)
            print(f"{m.id:24} {verdict:9} {time.monotonic() - started:5.0f}s  {detail}  [{m.what}]", flush=True)
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)
    caught = results.count("caught")
    print(f"total: {caught} of {len(results)} caught, {results.count('SURVIVED')} survived, "
          f"{results.count('stale')} stale, {results.count('broken')} broken")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
