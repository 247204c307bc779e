"""Running checks on an edited text in a child process: a task's tests, or the user's --test.

Checks never run inside the specedit process: a candidate edit is untrusted code that may loop,
exit, or break the interpreter. Each runs with a timeout, in a temporary folder, with its output
captured for the report (and for the next attempt's prompt).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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
# A folder beyond these bounds (a file in the home folder) is refused rather than copied.
COPY_FILES = 20_000  # files, folders and links, caches and environments not counted
COPY_BYTES = 500 << 20


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


def _run(
    args: list[str] | str,
    cwd: Path,
    timeout: float,
    shell: bool,
    extra: dict[str, str] | None = None,
    inherit: bool = True,
) -> CheckResult:
    """Run in its own process group, so a timeout kills the whole tree the check started; the
    environment is ours less SPECEDIT_* settings (none of it unless `inherit`), plus `extra`.

    Output is read as it comes and only its tail is kept, so a check that prints gigabytes
    costs no memory. Nothing here can hang: a process that left the group (`setsid`) and still
    holds the output pipe gets DRAIN_SECONDS after the check ends, then the pipe is closed."""
    ours = os.environ if inherit else {}
    env = {k: v for k, v in ours.items() if not k.startswith("SPECEDIT_")} | (extra or {})
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
    (`run_isolated`)."""
    with tempfile.TemporaryDirectory(prefix="specedit-check-") as folder:
        path = Path(folder) / "program.py"
        path.write_text(source, encoding="utf-8")
        return run_isolated([str(path)], timeout)


def run_isolated(
    args: list[str], timeout: float, environment: dict[str, str] | None = None
) -> CheckResult:
    """This interpreter with `args`, isolated (`-I`: no user site, no PYTHON* variables, no
    current folder on the path), in an empty temporary folder of its own; with `environment`,
    that alone for its environment."""
    inherit = environment is None
    with tempfile.TemporaryDirectory(prefix="specedit-run-") as folder:
        args = [sys.executable, "-I", *args]
        return _run(args, Path(folder), timeout, shell=False, extra=environment, inherit=inherit)


PLACEHOLDER = "{file}"


class CheckRefused(Exception):
    """--test cannot run as asked; the message says why and what to do instead, in one line."""


def fill_in(command: str, path: Path) -> str:
    """`command` with `{file}` replaced by `path` quoted for the shell (`shlex.quote`), so a
    file named `x;touch PWNED;#.py` or `my file.py` is one argument, never shell syntax.

    `{file}` must be a word of its own, or all of a quoted string ('{file}', "{file}": those
    quotes are replaced too, as they would undo the quoting). Inside a longer quoted string
    (`sh -c "pytest {file}"`) no quoting of the path would hold, so such a command is refused
    (CheckRefused); "$SPECEDIT_FILE" names the same path there."""
    quoted = shlex.quote(str(path))
    parts, at = [], 0
    while at < len(command):
        if command.startswith(PLACEHOLDER, at):
            parts.append(quoted)
            at += len(PLACEHOLDER)
        elif command[at] == "\\":  # an escaped character, `\{file}` included, stays as it is
            parts.append(command[at : at + 2])
            at += 2
        elif command[at] in "'\"":
            end = _string_end(command, at)
            string = command[at:end]
            if string in (f"'{PLACEHOLDER}'", f'"{PLACEHOLDER}"'):
                parts.append(quoted)
            elif PLACEHOLDER in string:
                raise CheckRefused(
                    "--test: {file} inside a longer quoted string would not stay one shell "
                    'word for every file name; write "$SPECEDIT_FILE" there instead (the '
                    "environment variable names the same edited copy)"
                )
            else:
                parts.append(string)
            at = end
        else:
            parts.append(command[at])
            at += 1
    return "".join(parts)


def _string_end(command: str, start: int) -> int:
    """Where the quoted string opened at `start` ends (just past its closing quote), as the
    shell reads it: nothing escapes a single quote, a backslash escapes a double one; the
    command's end when the string is not closed."""
    quote, at = command[start], start + 1
    while at < len(command) and command[at] != quote:
        at += 2 if quote == '"' and command[at] == "\\" else 1
    return min(at + 1, len(command))


@contextlib.contextmanager
def command_check(
    command: str, file: Path, timeout: float = 120.0
) -> Iterator[Callable[[str], CheckResult]]:
    """Check candidates for `file` with the user's shell `command`: yields `check(text)`, which
    writes `text` as the file's copy, in a temporary copy of its folder made once (the real
    folder is untouched whatever the command does), and runs the command there. `{file}` in the
    command (see `fill_in`) and `$SPECEDIT_FILE` name the copy.

    The copy is made once and serves every candidate: each is written over the file's copy (a
    new regular file, even where the file is a symlink, so the command sees the candidate under
    the name it was given), and what a check changed elsewhere in the copy stays for the next.
    CheckRefused, before anything is copied, for a command that misplaces `{file}` and for a
    folder too large to copy."""
    fill_in(command, file)
    file = file.absolute()
    source = file.parent.resolve()  # the folder the name sits in, not a symlink's target's
    entries = _listing(source, file.name)
    mode = file.stat().st_mode & 0o7777  # an executable script stays one
    with tempfile.TemporaryDirectory(prefix="specedit-test-") as scratch:
        copy = Path(scratch) / (source.name or "root")
        _copy(source, copy, entries)
        target = copy / file.name
        filled = fill_in(command, target)

        def check(text: str) -> CheckResult:
            target.unlink(missing_ok=True)  # a symlink, or what the last check left there
            target.write_text(text, encoding="utf-8")
            target.chmod(mode)
            return _run(filled, copy, timeout, shell=True, extra={"SPECEDIT_FILE": str(target)})

        yield check


def run_command(command: str, file: Path, text: str, timeout: float = 120.0) -> CheckResult:
    """Check one `text` for `file` with the user's shell `command` (see `command_check`)."""
    with command_check(command, file, timeout) as check:
        return check(text)


def _listing(source: Path, name: str) -> list[tuple[Path, str]]:
    """What the copy of `source` (the folder of the file `name`) holds (`_walk`); CheckRefused
    as soon as the walk passes COPY_FILES entries or COPY_BYTES of files."""
    entries: list[tuple[Path, str]] = []
    size = 0
    for inside, kind, bytes_ in _walk(source):
        entries.append((inside, kind))
        size += bytes_
        if len(entries) > COPY_FILES or size > COPY_BYTES:
            what = f"{COPY_FILES:,} files" if size <= COPY_BYTES else f"{COPY_BYTES >> 20} MiB"
            raise CheckRefused(
                f"--test runs in a copy of the folder of {name}, {source}, which holds more "
                f"than {what}: keep the file in its project's folder (the one its tests run "
                "from), or copy it into a smaller folder to test it"
            )
    return entries


def _walk(source: Path) -> Iterator[tuple[Path, str, int]]:
    """What a copy of `source` holds, folders before their contents, as (path inside it, kind,
    bytes): kind "folder", "file", "symlink" or "linked" (an environment, linked rather than
    copied). Special files (FIFOs, sockets, devices) are left out, as a check has no use for
    them and reading a FIFO blocks, and so are folders the user cannot read."""
    folders = [Path()]
    while folders:
        folder = folders.pop()
        try:
            listing = os.scandir(source / folder)
        except PermissionError:
            continue
        with listing:
            for entry in listing:
                inside = folder / entry.name
                if entry.name in SKIPPED:
                    continue
                if entry.name in LINKED and entry.is_dir():
                    yield inside, "linked", 0
                elif entry.is_symlink():
                    yield inside, "symlink", 0
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(inside)
                    yield inside, "folder", 0
                elif entry.is_file(follow_symlinks=False):
                    yield inside, "file", entry.stat(follow_symlinks=False).st_size


def _copy(source: Path, copy: Path, entries: list[tuple[Path, str]]) -> None:
    """Make `copy` hold `entries` of `source` (`_walk`): symlinks stay links with the same
    target, environments are linked to the real ones, and files the user cannot read are left
    out."""
    copy.mkdir()
    for inside, kind in entries:
        original, made = source / inside, copy / inside
        if kind == "folder":
            made.mkdir()
        elif kind == "symlink":
            made.symlink_to(os.readlink(original))
        elif kind == "linked":
            made.symlink_to(original, target_is_directory=True)
        else:
            with contextlib.suppress(PermissionError):
                shutil.copy2(original, made)
