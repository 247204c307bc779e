"""Running checks on an edited text in a child process: a task's tests, or the user's --test.

Checks never run inside the specedit process: a candidate edit is untrusted code that may loop,
exit, or break the interpreter. Each runs with a timeout, in a temporary folder, with its output
captured for the report (and for the next attempt's prompt).
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 4000  # characters of a failing check's output that are kept
TAIL_BYTES = 64 * 1024  # bytes of output held while the check runs (the tail; the rest is cut)
READ_BYTES = 64 * 1024
DRAIN_SECONDS = 3.0  # after the check ends, how long output from processes it left may take
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
    """Run in its own process group, so a timeout kills the whole tree the check started.

    Output is read as it comes and only its tail is kept, so a check that prints gigabytes
    costs no memory. Nothing here can hang: a process that left the group (`setsid`) and still
    holds the output pipe gets DRAIN_SECONDS after the check ends, then the pipe is closed."""
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
    tail = _Tail()
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            deadline = started + timeout
            while (code := process.poll()) is None and (left := deadline - time.perf_counter()) > 0:
                if selector.get_map():
                    tail.read(selector, min(0.1, left))
                else:  # the output is closed but the check runs on
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(min(0.1, left))
            if code is None:  # timed out; not reaped yet, so the group is still the check's
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            drain = time.perf_counter() + DRAIN_SECONDS
            while selector.get_map() and (left := drain - time.perf_counter()) > 0:
                tail.read(selector, left)
    except BaseException:  # Ctrl-C: the check's whole process group goes too
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        raise
    finally:
        process.stdout.close()  # a process that left the group and holds the pipe gets EPIPE
    return CheckResult(code == 0, code, tail.text(), time.perf_counter() - started)


class _Tail:
    """The last TAIL_BYTES of a pipe's output, and how much came before them."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0

    def read(self, selector: selectors.BaseSelector, wait: float) -> None:
        """Read what comes within `wait` seconds; at the end of the output, stop watching."""
        for key, _ in selector.select(wait):
            chunk = os.read(key.fd, READ_BYTES)
            if not chunk:
                selector.unregister(key.fileobj)
                continue
            self.total += len(chunk)
            self.kept += chunk
            if len(self.kept) > 2 * TAIL_BYTES:  # trimmed now and then, not on every read
                del self.kept[:-TAIL_BYTES]

    def text(self) -> str:
        shown = self.kept[-TAIL_BYTES:]
        text = shown.decode("utf-8", errors="replace")
        if self.total == len(shown) and len(text) <= OUTPUT_LIMIT:
            return text
        return f"[output cut: its last {OUTPUT_LIMIT} characters follow]\n" + text[-OUTPUT_LIMIT:]


def run_program(source: str, timeout: float = 20.0) -> CheckResult:
    """Run a Python program (an edited module followed by its tests) in an isolated interpreter
    (`-I`: no user site, no PYTHON* variables, no current folder on the path) in an empty
    temporary folder."""
    with tempfile.TemporaryDirectory(prefix="specedit-check-") as folder:
        path = Path(folder) / "program.py"
        path.write_text(source, encoding="utf-8")
        return _run([sys.executable, "-I", str(path)], Path(folder), timeout, shell=False)


# `{file}`, bare or already in quotes ('{file}', "{file}"): either way it becomes one quoted word.
PLACEHOLDER = re.compile(r"""'\{file\}'|"\{file\}"|\{file\}""")


def fill_in(command: str, path: Path) -> str:
    """`command` with `{file}` replaced by `path` quoted for the shell (`shlex.quote`), so a
    file named `x;touch PWNED;#.py` or `my file.py` is one argument, never shell syntax. Quotes
    the user put around the placeholder are replaced too, as they would otherwise undo the
    quoting. Inside a longer quoted string (`sh -c "pytest {file}"`) that holds only for paths
    without quotes: write `{file}` as a word of its own."""
    return PLACEHOLDER.sub(lambda _: shlex.quote(str(path)), command)


def run_command(command: str, file: Path, text: str, timeout: float = 120.0) -> CheckResult:
    """Run the user's shell `command` against `text` as the new content of `file`, in a
    temporary copy of the file's folder, so the real folder is untouched whatever the command
    does. `{file}` in the command names the file's copy, quoted (see `fill_in`)."""
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
        return _run(fill_in(command, target), copy, timeout, shell=True)
