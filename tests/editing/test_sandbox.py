"""The default's examples run confined (editing/sandbox.py): a candidate's examples compute, and
whatever else its code tries fails inside the child, with nothing done."""

from __future__ import annotations

import subprocess
import time

import pytest

from specedit.editing import sandbox
from specedit.editing.stated import Stated

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="no seccomp on this system")

ADD = '''from fractions import Fraction


def add(a, b):
    """Add two numbers.

    >>> add(2, 3)
    5
    >>> import json; json.dumps([add(Fraction(1, 2), 1) == Fraction(3, 2)])
    '[true]'
    """
    return a + b
'''


def _checked(text: str, candidate: str, cases=(), seconds: float = 10.0):
    with sandbox.confined_check("add.py", text, True, list(cases), seconds) as check:
        assert check is not None
        return check(candidate)


def test_examples_that_compute_pass_and_those_that_fail_are_reported():
    """Python's own modules, imported by the file or by an example, are there; doctest's
    report and the stated calls' say what failed, with the file's lines."""
    assert _checked(ADD, ADD).passed
    wrong = ADD.replace("a + b", "a - b")
    result = _checked(ADD, wrong, [Stated("add(1, 1)", "2", "the instruction")])
    assert not result.passed and result.returncode == 1
    assert "Failed example:\n    add(2, 3)\nExpected:\n    5\nGot:\n    -1" in result.output
    assert "add(1, 1) returned 0; the instruction says 2" in result.output
    assert 'File "' in result.output and "add.py" in result.output  # where, as doctest says


# What a hostile candidate's code may try when its examples call it; each raises where it
# fails, so that `add(2, 3)` gives 5 and the example passes only where it was done.
ATTEMPTS = {
    "write a file": "open({planted!r}, 'w').write('x')",
    "run a command": "assert os.system('touch ' + {planted!r}) == 0",
    "start a process": "subprocess.run(['touch', {planted!r}], check=True)",
    "call libc itself": "assert ctypes.CDLL(None).system(b'touch ' + {planted!r}.encode()) == 0",
    "fork": "os.fork() or (open({planted!r}, 'w').close(), os._exit(0))",
    "read a file": "assert open({secret!r}).read()",
    "list a folder": "assert os.listdir({folder!r})",
    "open a socket": "socket.socket().close()",
    "signal another process": "os.kill({sleeper}, signal.SIGKILL)",
    # its output pipe set to signal its owner each time the parent reads it
    "have its pipe signal another process": "fcntl.fcntl(1, fcntl.F_SETOWN, {sleeper}); "
    "fcntl.fcntl(1, 10, signal.SIGKILL); "  # F_SETSIG
    "fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_ASYNC); print(0)",
    "stat a file": "assert os.stat({secret!r}).st_size",
    "read another process's limits": "resource.prlimit({sleeper}, resource.RLIMIT_AS)",
    "read the user's environment": "assert os.environ['CANARY_TOKEN']",
    "lift its memory bound": "resource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
}


@pytest.mark.parametrize("attempt", ATTEMPTS)
def test_a_candidate_can_do_nothing_but_compute(attempt, tmp_path, monkeypatch):
    monkeypatch.setenv("CANARY_TOKEN", "s3cr3t")
    planted, secret = tmp_path / "planted", tmp_path / "secret.txt"
    secret.write_text("the secret")
    with subprocess.Popen(["sleep", "60"]) as sleeper:
        code = ATTEMPTS[attempt].format(
            planted=str(planted), secret=str(secret), folder=str(tmp_path), sleeper=sleeper.pid
        )
        imports = "    import ctypes, fcntl, os, resource, signal, socket, subprocess\n"
        hostile = ADD.replace("    return a + b\n", f"{imports}    {code}\n    return a + b\n")
        result = _checked(ADD, hostile)
        time.sleep(0.1)  # a signal the parent's reads set off has arrived
        alive = sleeper.poll() is None
        sleeper.kill()
    assert not result.passed, result.output
    assert "Failed example:\n    add(2, 3)" in result.output
    assert not planted.exists() and "the secret" not in result.output and alive


def test_code_that_runs_when_the_file_is_loaded_is_confined_too(tmp_path):
    planted = tmp_path / "planted"
    hostile = f"open({str(planted)!r}, 'w').write('x')\n" + ADD
    result = _checked(ADD, hostile)
    assert result.returncode == sandbox.CANNOT_RUN
    assert "PermissionError" in result.output and not planted.exists()


@pytest.mark.parametrize(
    "module",
    ["antigravity", "unittest.__main__"],  # a browser; a test run of its arguments
)
def test_a_module_that_acts_when_imported_is_not_imported_for_a_file(module, tmp_path, monkeypatch):
    """Python's own modules that the file names are imported before the filter closes, but
    never one that acts as it loads; and what they would start is refused even there."""
    planted = tmp_path / "planted"
    monkeypatch.setenv("BROWSER", f"touch {planted} %s")
    text = ADD.replace("    >>> add(2, 3)", f"    >>> import {module}\n    >>> add(2, 3)")
    result = _checked(text, text)
    assert not planted.exists() and "Ran 0 tests" not in result.output


def test_a_candidate_that_loops_or_takes_all_memory_fails_in_bounded_time():
    looping = ADD.replace("    return a + b\n", "    while True:\n        pass\n")
    result = _checked(ADD, looping, seconds=1.0)
    assert result.timed_out and result.seconds < 5
    greedy = ADD.replace("    return a + b\n", "    bytearray(8 << 30)\n    return a + b\n")
    result = _checked(ADD, greedy)
    assert not result.passed and "MemoryError" in result.output


@pytest.mark.parametrize(
    "text",
    [
        "import numpy\n" + ADD,  # not Python's own: not imported before the filter closes
        "DATA = open(__file__).read()\n" + ADD,  # reads a file as it loads
    ],
)
def test_an_input_that_cannot_run_confined_is_not_judged_by_its_examples(text):
    with sandbox.confined_check("add.py", text, True, [], 10.0) as check:
        assert check is None


def test_the_modules_imported_first_are_python_s_own_named_by_the_code_or_an_example():
    text = (
        "import os.path, numpy\nfrom collections import abc\nfrom . import sibling\n"
        "def f():\n    '''\n    >>> import json\n    >>> from decimal import Decimal\n    '''\n"
        "    import heapq\n"
    )
    assert sandbox.standard_imports(text) == [
        "os.path",
        "collections",
        "collections.abc",
        "heapq",
        "json",
        "decimal",
        "decimal.Decimal",
    ]
    assert sandbox.standard_imports("def broken(:\n") == []
