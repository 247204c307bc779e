"""A Python file's own examples (`>>>`, and calls its docstrings give with their values outside
doctest), its own tests (editing/file_tests.py: a `__main__` block's asserts, `test_*`
functions, TestCase classes) and the calls its instruction says the value of
(editing/stated.py), run on each candidate to prefer one that passes them.

A docstring's examples say what its function must do (`>>> median([1, 3, 2])` then `2`), and a
fix that breaks them, or leaves the bug they show, is wrong whatever else it does; so does a
call the user wrote with the value it should give. Running them runs the file's code, and a
file is not the user's word (`git clone` makes every file yours): by default they run confined
to computing (editing/sandbox.py), where that can be set up, and not at all elsewhere. Asked for
(`--examples`, never from a project's settings), they run as the user's own code, as `--test`
runs a command: in a temporary copy of the file's folder, with a timeout (editing/checks.py).
Where no candidate passes, the one delivered is the one the draw without them would have
delivered, with a warning: the examples may be wrong, or need what the copy lacks.
"""

from __future__ import annotations

import builtins
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from specedit.editing import file_tests, sandbox, stated
from specedit.editing.checks import CheckResult, command_check
from specedit.editing.editor import Mode
from specedit.editing.safety import asks_for_removal

EXAMPLE = re.compile(r"^[ \t]*>>> ", re.MULTILINE)
FEEDBACK_CHARS = 1500  # of the examples' report, shown to the model on a sampled redraw
TIMEOUT = 30.0  # seconds a candidate's examples may take: a loop the fix left is a failure
FAILED = "it fails the examples"


class Examples(Enum):
    """Whether a Python file's examples judge its candidates, and how they run."""

    OFF = "off"  # --no-examples; --test judges instead; a single candidate
    CONFINED = "confined"  # the default: confined to computing, where that can be done
    ASKED = "asked"  # --examples: as the user's own code, in a copy of the file's folder


def judging(examples: Examples, mode: Mode | None) -> Examples:
    """How the examples run on an edit of `mode`: confined (the default) on fixes and edits,
    where they were measured (docs/quality.md), not on rewrites or merges; asked, on any."""
    if examples is Examples.CONFINED and mode not in (Mode.FIX, Mode.EDIT):
        return Examples.OFF
    return examples


def reported(instruction: str, mode: Mode | None) -> str:
    """What of an instruction may state calls and their values: all of it, but not an apply's,
    which is a snippet of code rather than a report of what calls give."""
    return "" if mode is Mode.APPLY else instruction


class Runnable(NamedTuple):
    """What of a file and its instruction can run on its candidates."""

    doctests: bool  # `>>>` examples in its docstrings
    cases: list[stated.Stated]  # calls its docstrings and the instruction give with values
    tests: int  # how many tests of its own it has (editing/file_tests.py)

    def __bool__(self) -> bool:
        return bool(self.doctests or self.cases or self.tests)


def runnable(text: str, language: str | None, instruction: str) -> Runnable:
    """Whether `text` has `>>>` examples, the calls its docstrings and the instruction give
    with their values to run on it (those whose names the file binds at its top level or
    Python's builtins are, not a variable the instruction speaks of, which the file does not
    have, and that read at least one of the file's), and how many tests of its own it has.
    Nothing for a language other than Python."""
    if language != "python":
        return Runnable(False, [], 0)
    names = stated.top_level_names(text)
    known = names | set(dir(builtins))
    cases = [
        case
        for case in [*stated.docstring_examples(text), *stated.stated_examples(instruction)]
        if case.names <= known and case.names & names
    ]
    return Runnable(EXAMPLE.search(text) is not None, cases, file_tests.tests_in(text))


@contextmanager
def examples_check(
    path: Path, text: str, language: str | None, examples: Examples, instruction: str = ""
) -> Iterator[Callable[[str], CheckResult] | None]:
    """Where `text` (the file at `path`) has examples or tests and `examples` runs them:
    `check(candidate)`, which runs doctest, the docstrings' and the instruction's calls and the
    file's own tests on the candidate by this interpreter, confined (`sandbox.confined_check`)
    or, asked, as a `--test` command in a copy of the file's folder (`checks.command_check`);
    None otherwise."""
    wanted = examples is not Examples.OFF
    found = runnable(text, language, instruction) if wanted else Runnable(False, [], 0)
    if not found:
        yield None
    elif examples is Examples.CONFINED:
        name = path.name if path.suffix == ".py" else "candidate.py"
        doctests, cases, tests = found
        with sandbox.confined_check(name, text, doctests, cases, TIMEOUT, tests > 0) as check:
            yield _keeping_tests(check, tests, instruction) if check and tests else check
    else:
        with command_check(_commands(found), path, TIMEOUT) as check:
            yield _keeping_tests(check, found.tests, instruction) if found.tests else check


def _keeping_tests(
    check: Callable[[str], CheckResult], had: int, instruction: str
) -> Callable[[str], CheckResult]:
    """`check`, failing a candidate with fewer tests of its own (`file_tests.tests_in`) than
    the `had` of its input unless the instruction asks to remove something: an answer that
    deletes the assert that shows the bug must not pass by it."""
    if asks_for_removal(instruction):
        return check

    def checked(candidate: str) -> CheckResult:
        if (has := file_tests.tests_in(candidate)) < had:
            output = f"the answer has {has} of the file's {had} tests (asserts, test functions)"
            return CheckResult(False, 1, output, 0.0)
        return check(candidate)

    return checked


def _commands(found: Runnable) -> str:
    """The shell command that runs the examples and tests on `{file}` as --test runs a
    command."""
    python = shlex.quote(sys.executable)
    # -P: the copy's folder (the cwd) is not searched first for the checkers' own modules.
    commands = [f"{python} -P -m specedit.editing.doctests {{file}}"] if found.doctests else []
    if found.cases:
        encoded = shlex.quote(stated.encode(found.cases))
        commands.append(f"{python} -P -m specedit.editing.stated {{file}} {encoded}")
    if found.tests:
        commands.append(f"{python} -P -m specedit.editing.file_tests {{file}}")
    return " && ".join(commands)


def feedback(output: str) -> str:
    """What the model is told after an answer failed the examples: their report, its end."""
    return (
        "Your previous answer fails the examples (the file's docstrings and tests, the calls in "
        "the instruction), which show what the code must do. The report:\n```\n"
        f"{output[-FEEDBACK_CHARS:].strip()}\n```\nReturn the complete file with the code "
        "changed as asked and every other line exactly as it was."
    )
