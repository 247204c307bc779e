"""A file's examples run where they can compute and do nothing else: the default's check.

A docstring's examples tell a right fix from a wrong one, but running them runs the file's
code, and a file is not the user's word (`git clone` makes every file yours). So by default they
run only in a child process that the kernel holds to computing: a seccomp filter
(libseccomp, through pyseccomp) lets through the system calls of a computation (memory,
time, signals, reading and writing the pipes it was given, ending) and answers every other
with EPERM: no file is opened, listed or changed, no command or process started, no socket
made, no signal sent, no limit raised. Memory, CPU time and output are bounded too. Where the
filter cannot be set up (not Linux, no libseccomp), the examples are not run unless the user
asks (`--examples`, editing/examples.py).

The child reads the candidate and imports what it may need of Python's standard library
(trusted code, not the file's) before the filter closes; a module imported later, a data file,
a thread or a third-party package fails inside the sandbox. Where the input itself cannot run
there, the examples cannot judge its candidates and are not used.

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
import resource
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
MEMORY_BYTES = 2 << 30  # address space the child may map
PROBE_SECONDS = 10.0

# What a computation needs of the kernel; every other system call fails with EPERM. Reading
# and writing go only to descriptors the child already holds (its output pipe, /dev/null):
# nothing that opens one is allowed.
ALLOWED = (
    "read",
    "write",
    "readv",
    "writev",
    "close",
    "lseek",
    "fcntl",
    "dup",
    "dup3",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
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
AT_EMPTY_PATH = 0x1000  # fstat(fd) is newfstatat(fd, "", buf, AT_EMPTY_PATH) in glibc


class Unavailable(RuntimeError):
    """The filter cannot be set up here."""


def confine(seconds: float) -> None:
    """Hold this process to computing from now on (see the module's docstring); Unavailable
    where it cannot be done."""
    try:
        import pyseccomp as seccomp  # loads libseccomp by ctypes
    except (ImportError, OSError, RuntimeError) as exc:
        raise Unavailable(f"no seccomp here ({exc})") from None
    limits = {
        resource.RLIMIT_AS: MEMORY_BYTES,
        resource.RLIMIT_CPU: int(seconds) + 1,
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        hard = resource.getrlimit(which)[1]
        bounded = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (bounded, bounded))
    try:
        rules = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
        for name in ALLOWED:
            rules.add_rule(seccomp.ALLOW, name)
        empty_path = seccomp.Arg(3, seccomp.MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH)
        rules.add_rule(seccomp.ALLOW, "newfstatat", empty_path)
        rules.add_rule(seccomp.ALLOW, "prlimit64", seccomp.Arg(2, seccomp.EQ, 0))  # reads only
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


def run_examples(path: str, source: str, doctests: bool, cases: list[list[str]]) -> int:
    """Run the file's code as a module, then its doctests (reported as `python -m doctest`
    reports them) and each stated call; 0 where all pass, CANNOT_RUN where the file's own code
    raised, 1 otherwise."""
    import doctest

    name = Path(path).stem or "candidate"
    module = types.ModuleType(name)
    module.__file__ = path
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    sys.modules[name] = module
    try:
        exec(compile(source, path, "exec"), module.__dict__)  # confined by now
    except (Exception, SystemExit) as exc:
        print(f"running the file raised {type(exc).__name__}: {exc}")
        return CANNOT_RUN
    failed = doctest.testmod(module, verbose=False).failed if doctests else 0
    failed += stated.run_calls(module.__dict__, cases)
    return 1 if failed else 0


def main(path: str, spec: str) -> int:
    """The child: read the candidate, import its standard-library modules, close the filter,
    run its examples (`spec`: JSON {"doctests": bool, "cases": [[call, want, said_by], ...],
    "seconds": float}); UNAVAILABLE where the filter cannot be set up."""
    source = Path(path).read_text(encoding="utf-8")
    wanted = json.loads(spec)
    for module in ["doctest", *standard_imports(source)]:  # nothing is imported once confined
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    try:
        confine(wanted["seconds"])
    except Unavailable as exc:
        print(exc)
        return UNAVAILABLE
    return run_examples(path, source, wanted["doctests"], wanted["cases"])


@functools.cache
def available() -> bool:
    """Whether the filter can be set up here: one child that sets it up and proves it holds
    (its own file cannot be read back). Asked once a process."""
    if not sys.platform.startswith("linux"):
        return False
    probe = "open(__file__).read()\n"
    with tempfile.TemporaryDirectory(prefix="specedit-probe-") as folder:
        result = _child(Path(folder) / "probe.py", probe, False, [], PROBE_SECONDS)
    return result.returncode == CANNOT_RUN and "PermissionError" in result.output


def _child(
    path: Path, text: str, doctests: bool, cases: list[list[str]], seconds: float
) -> CheckResult:
    path.write_text(text, encoding="utf-8")
    spec = json.dumps({"doctests": doctests, "cases": cases, "seconds": seconds})
    return run_isolated(["-m", "specedit.editing.sandbox", str(path), spec], seconds)


@contextlib.contextmanager
def confined_check(
    name: str, text: str, doctests: bool, cases: list[stated.Stated], seconds: float
) -> Iterator[Callable[[str], CheckResult] | None]:
    """`check(candidate)`, which runs the examples on a candidate in the sandbox (the file
    named `name` in an empty folder); None where the sandbox cannot be set up here, or where
    the input `text` itself cannot run in it (a module it needs is not Python's own, or is
    imported late): the examples could not tell its candidates apart."""
    calls = [[case.call, case.want, case.said_by] for case in cases]
    if not available():
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="specedit-examples-") as folder:
        path = Path(folder) / (Path(name).name or "candidate.py")

        def check(candidate: str) -> CheckResult:
            return _child(path, candidate, doctests, calls, seconds)

        yield None if check(text).returncode in (CANNOT_RUN, UNAVAILABLE) else check


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
