"""A file's examples run where they can compute and do nothing else: the default's check.

A docstring's examples tell a right fix from a wrong one, but running them runs the file's
code, and a file is not the user's word (`git clone` makes every file yours). So by default they
run only in a child process that the kernel holds to computing: a seccomp filter
(libseccomp, through pyseccomp) lets through the system calls of a computation (memory,
time, its own signal handlers, reading and writing the descriptors it was given: /dev/null and
its output pipe, ending) and answers every other with EPERM: no file is opened, stat'ed,
listed or changed, no command or process started, no socket made, no signal sent (nor set to
be sent by its pipe), no limit raised. Memory, CPU time and output are bounded too, and the
child sees none of the user's environment. Where the filter cannot be set up (not Linux, no
libseccomp), the examples are not run unless the user asks (`--examples`,
editing/examples.py).

The child reads the candidate and imports what it may need of Python's standard library
(trusted code, not the file's) before the filter closes, itself under a first filter that
starts, connects, signals and writes nothing, and never a module that acts when imported (a
`__main__`, `antigravity`); a module imported later, a data file, a thread or a third-party
package fails inside the sandbox. Where the input itself cannot run there, the examples cannot
judge its candidates and are not used.

Run as a module, this file is the child: `python -I -m specedit.editing.sandbox FILE SPEC`.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import functools
import importlib
import json
import linecache
import os
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path

from specedit.editing import stated
from specedit.editing.checks import CheckResult, run_isolated
from specedit.editing.region import UNPARSABLE

UNAVAILABLE = 86  # the child's exit code where the filter could not be set up
CANNOT_RUN = 87  # ... where the file's own code raised before any example ran
UNTESTABLE = 88  # ... where a test of the file's own failed for want of a file or a module
MEMORY_BYTES = 2 << 30  # address space the child may map
PROBE_SECONDS = 10.0
ENVIRONMENT = {"LC_ALL": "C.UTF-8"}  # all the child sees of ours: no key or token
DOCTESTS = "specedit.editing.doctests"  # how the child runs doctest
# ... and the file's own tests (`assertLogs` imports unittest._log when first called)
FILE_TESTS = ("specedit.editing.file_tests", "unittest", "unittest._log")
SECCOMP_PLATFORM = sys.platform.startswith("linux")  # elsewhere no child is started

# What a computation needs of the kernel; every other system call fails with EPERM. Reading
# and writing go only to descriptors the child already holds (its output pipe, /dev/null):
# nothing that opens one is allowed. `fcntl`, `madvise` and `prlimit64` are allowed only as
# `confine` narrows them.
ALLOWED = (
    "read",
    "write",
    "readv",
    "writev",
    "close",
    "lseek",
    "dup",
    "dup3",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "brk",
    "futex",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "getpid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getrusage",
    "times",
    "sched_yield",
    "sched_getaffinity",
    "getrandom",
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "nanosleep",
    "gettimeofday",
    "restart_syscall",
    "exit",
    "exit_group",
)
MADV_HWPOISON = 100  # this advice and those above it act on the machine's memory, not ours
# What the standard-library imports before the filter closes may not do either: start, connect,
# signal, or change a file.
PREPARING_DENIED = (
    "execve",
    "execveat",
    "fork",
    "vfork",
    "clone",
    "clone3",
    "socket",
    "connect",
    "kill",
    "tkill",
    "tgkill",
    "ptrace",
    "process_vm_writev",
    "io_uring_setup",
    "openat2",  # its flags lie behind a pointer the filter cannot read
    "creat",
    "truncate",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmodat",
)
# Standard-library modules that act when imported; never imported for a file.
ACTING = {"antigravity", "this", "idlelib", "turtledemo", "test", "ensurepip", "venv", "lib2to3"}


class Unavailable(RuntimeError):
    """The filter cannot be set up here."""


def _seccomp():
    try:
        import pyseccomp  # loads libseccomp by ctypes

        return pyseccomp
    except (ImportError, OSError, RuntimeError) as exc:
        raise Unavailable(f"no seccomp here ({exc})") from None


def prepare() -> None:
    """The first filter, for the standard-library imports before `confine`: every system call
    but those that start, connect, signal or change a file (opened for writing too); Unavailable
    where it cannot be set up."""
    seccomp = _seccomp()
    try:
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        for name in PREPARING_DENIED:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        for flag in (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC):
            writing = seccomp.Arg(2, seccomp.MASKED_EQ, flag, flag)
            rules.add_rule(seccomp.ERRNO(errno.EPERM), "openat", writing)
            writing = seccomp.Arg(1, seccomp.MASKED_EQ, flag, flag)
            rules.add_rule(seccomp.ERRNO(errno.EPERM), "open", writing)
        rules.load()
    except (OSError, RuntimeError, ValueError) as exc:
        raise Unavailable(f"the seccomp filter did not load ({exc})") from None


def confine(seconds: float) -> None:
    """Hold this process to computing from now on (see the module's docstring); Unavailable
    where it cannot be done."""
    import fcntl
    import resource  # Unix only: imported where a sandbox is set up

    seccomp = _seccomp()
    limits = {
        resource.RLIMIT_AS: MEMORY_BYTES,
        resource.RLIMIT_CPU: int(seconds) + 1,
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        hard = resource.getrlimit(which)[1]
        bounded = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (bounded, bounded))
    allow, arg = seccomp.ALLOW, seccomp.Arg
    try:
        rules = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
        for name in ALLOWED:
            rules.add_rule(allow, name)
        # a descriptor's flags, but not its owner, signal or async I/O: a pipe set to signal
        # its owner (F_SETOWN, O_ASYNC) signals any process each time the parent reads it
        for command in (fcntl.F_GETFD, fcntl.F_SETFD, fcntl.F_GETFL, fcntl.F_DUPFD_CLOEXEC):
            rules.add_rule(allow, "fcntl", arg(1, seccomp.EQ, command))
        synchronous = arg(2, seccomp.MASKED_EQ, os.O_ASYNC, 0)
        rules.add_rule(allow, "fcntl", arg(1, seccomp.EQ, fcntl.F_SETFL), synchronous)
        rules.add_rule(allow, "madvise", arg(2, seccomp.LT, MADV_HWPOISON))
        own_limits = (arg(0, seccomp.EQ, 0), arg(2, seccomp.EQ, 0))  # read, not set
        rules.add_rule(allow, "prlimit64", *own_limits)
        rules.load()
    except (OSError, RuntimeError, ValueError) as exc:
        raise Unavailable(f"the seccomp filter did not load ({exc})") from None


def standard_imports(source: str) -> list[str]:
    """The standard-library modules `source` imports, in its code or its docstrings' `>>>`
    examples: what the child imports before the filter closes (the file's own imports then find
    them loaded)."""
    import doctest  # it imports pdb and more: not on every edit's start-up path

    try:
        tree = ast.parse(source)
    except UNPARSABLE:
        return []
    trees = [tree]
    parser = doctest.DocTestParser()
    for node in ast.walk(tree):
        docstring = _docstring(node)
        if docstring and ">>>" in docstring:
            for example in parser.get_examples(docstring):
                with contextlib.suppress(*UNPARSABLE):
                    trees.append(ast.parse(example.source))
    names = []
    for node in (node for tree in trees for node in ast.walk(tree)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    wanted = (name for name in names if name.partition(".")[0] in sys.stdlib_module_names)
    return list(dict.fromkeys(wanted))


def _docstring(node: ast.AST) -> str | None:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return ast.get_docstring(node, clean=False) if isinstance(node, kinds) else None


def run_examples(
    path: str, source: str, doctests: bool, cases: list[list[str]], tests: bool = False
) -> int:
    """Run the file's code as a module, then its doctests (reported as `python -m doctest`
    reports them), each stated call and, with `tests`, its own tests (editing/file_tests.py);
    0 where all pass, CANNOT_RUN where the file's own code raised, UNTESTABLE where a test
    failed for want of a file or a module, 1 otherwise."""
    from specedit.editing.doctests import testmod  # imported before the filter closed

    stem = Path(path).stem
    name = stem if stem not in ("", "__main__") else "candidate"  # a guard runs on import
    module = types.ModuleType(name)
    module.__file__ = path
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    sys.modules[name] = module
    try:
        exec(compile(source, path, "exec"), module.__dict__)  # confined by now
    except (Exception, SystemExit) as exc:
        print(f"running the file raised {type(exc).__name__}: {exc}")
        return CANNOT_RUN
    failed = testmod(module) if doctests else 0
    failed += stated.run_calls(module.__dict__, cases)
    if tests:
        from specedit.editing import file_tests  # imported before the filter closed

        try:
            failed += file_tests.run_tests(module, source)
        except file_tests.CannotJudge as exc:
            print(exc)
            return UNTESTABLE
    return 1 if failed else 0


def main(path: str, spec: str) -> int:
    """The child: read the candidate, import its standard-library modules under the first
    filter, close the second, prove it holds (the candidate's file cannot be read back), run
    its examples (`spec`: JSON {"doctests": bool, "cases": `stated.encode`'s text, "tests":
    bool, "seconds": float}); UNAVAILABLE where the filters cannot be set up or do not hold."""
    source = Path(path).read_text(encoding="utf-8")
    wanted = json.loads(spec)
    sys.argv[1:] = []  # a module that reads its arguments when imported reads none
    try:
        prepare()
        runners = [DOCTESTS, *(FILE_TESTS if wanted["tests"] else ())]
        for module in [*runners, *standard_imports(source)]:  # none is imported once confined
            if module.partition(".")[0] not in ACTING and "__main__" not in module.split("."):
                with contextlib.suppress(BaseException):
                    importlib.import_module(module)
        confine(wanted["seconds"])
        _holds(path)
    except Unavailable as exc:
        print(exc)
        return UNAVAILABLE
    cases = json.loads(wanted["cases"])
    return run_examples(path, source, wanted["doctests"], cases, wanted["tests"])


def _holds(path: str) -> None:
    """Unavailable unless the filter holds: the candidate's own file cannot be read back."""
    try:
        open(path, "rb").close()
    except PermissionError:
        return
    raise Unavailable("the seccomp filter does not hold")


@functools.cache
def available() -> bool:
    """Whether the sandbox can be set up here (a child that sets it up and proves it holds);
    asked once a process."""
    if not SECCOMP_PLATFORM:
        return False
    with tempfile.TemporaryDirectory(prefix="specedit-probe-") as folder:
        probe = Path(folder) / "probe.py"
        return _child(probe, "", False, stated.encode([]), False, PROBE_SECONDS).passed


def _child(
    path: Path, text: str, doctests: bool, cases: str, tests: bool, seconds: float
) -> CheckResult:
    path.write_text(text, encoding="utf-8")
    spec = json.dumps({"doctests": doctests, "cases": cases, "tests": tests, "seconds": seconds})
    args = ["-m", "specedit.editing.sandbox", str(path), spec]
    return run_isolated(args, seconds, environment=ENVIRONMENT)


@contextlib.contextmanager
def confined_check(
    name: str,
    text: str,
    doctests: bool,
    cases: list[stated.Stated],
    seconds: float,
    tests: bool = False,
) -> Iterator[Callable[[str], CheckResult] | None]:
    """`check(candidate)`, which runs the examples (and, with `tests`, the file's own tests)
    on a candidate in the sandbox (the file named `name` in an empty folder); None where the
    sandbox cannot be set up here, or where the input `text` itself cannot run in it (a module
    it needs is not Python's own, or is imported late): the examples could not tell its
    candidates apart. Where the input's own tests need what the sandbox withholds, they are
    left out, and the rest judge."""
    if not SECCOMP_PLATFORM:
        yield None
        return
    calls = stated.encode(cases)
    with tempfile.TemporaryDirectory(prefix="specedit-examples-") as folder:
        path = Path(folder) / (Path(name).name or "candidate.py")

        def check(candidate: str) -> CheckResult:
            return _child(path, candidate, doctests, calls, tests, seconds)

        outcome = check(text).returncode
        if outcome == UNTESTABLE:
            if not (doctests or cases):
                yield None
                return
            tests = False
            outcome = check(text).returncode
        yield None if outcome in (CANNOT_RUN, UNAVAILABLE) else check


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
