"""Running checks on an edited text in a child process: a task's tests, or the user's --test.

Checks never run inside the specedit process: a candidate edit is untrusted code that may loop,
exit, or break the interpreter. Each runs with a timeout, in a temporary folder, with its output
captured for the report (and for the next attempt's prompt).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 4000  # characters of a failing check's output that are kept
# Copying these into the scratch folder would be slow or pointless: caches are skipped, and
# environments are linked, so `{file}`'s neighbours and `.venv/bin/pytest` still work there.
SKIPPED = (".git", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache")
LINKED = (".venv", "venv", "node_modules")


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    returncode: int | None  # None when the check timed out
    output: str  # stdout and stderr together, the tail that matters
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def summary(self) -> str:
        """One line for a report."""
        if self.passed:
            return "passed"
        if self.timed_out:
            return "timed out"
        last = self.output.strip().splitlines()[-1:]
        return f"failed (exit {self.returncode})" + (f": {last[0][:160]}" if last else "")


def _run(args: list[str] | str, cwd: Path, timeout: float, shell: bool) -> CheckResult:
    """Run in its own process group, so a timeout kills the whole tree the check started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECEDIT_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.perf_counter()
    process = subprocess.Popen(
        args,
        cwd=cwd,
        shell=shell,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        code = None
    except BaseException:  # Ctrl-C: the check's whole process group goes too
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    text = output.decode("utf-8", errors="replace")[-OUTPUT_LIMIT:]
    return CheckResult(code == 0, code, text, time.perf_counter() - started)


def run_program(source: str, timeout: float = 20.0) -> CheckResult:
    """Run a Python program (an edited module followed by its tests) in an isolated interpreter
    (`-I`: no user site, no PYTHON* variables, no current folder on the path) in an empty
    temporary folder."""
    with tempfile.TemporaryDirectory(prefix="specedit-check-") as folder:
        path = Path(folder) / "program.py"
        path.write_text(source, encoding="utf-8")
        return _run([sys.executable, "-I", str(path)], Path(folder), timeout, shell=False)


def run_command(command: str, file: Path, text: str, timeout: float = 120.0) -> CheckResult:
    """Run the user's shell `command` against `text` as the new content of `file`, in a
    temporary copy of the file's folder, so the real folder is untouched whatever the command
    does. `{file}` in the command names the file's copy."""
    source = file.resolve().parent
    with tempfile.TemporaryDirectory(prefix="specedit-test-") as scratch:
        copy = Path(scratch) / source.name
        shutil.copytree(
            source, copy, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED, *LINKED)
        )
        for name in LINKED:
            if (source / name).is_dir():
                (copy / name).symlink_to(source / name, target_is_directory=True)
        target = copy / file.name
        target.write_text(text, encoding="utf-8")
        return _run(command.replace("{file}", str(target)), copy, timeout, shell=True)
