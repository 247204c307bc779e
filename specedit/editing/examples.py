"""`--examples`: a Python file's own `>>>` examples, run on each candidate to prefer one that
passes them.

A docstring's examples say what its function must do (`>>> median([1, 3, 2])` then `2`), and a
fix that breaks them, or leaves the bug they show, is wrong whatever else it does. Running them
runs the file, so it happens only where the user asked (`--examples`, never from a project's
settings: a cloned repository's file is not the user's word), as `--test` runs a command: in a
temporary copy of the file's folder, with a timeout (editing/checks.py). Where no candidate
passes, the one delivered is the one the draw without the option would have delivered, with a
warning: the examples may be wrong, or need what the copy lacks.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from specedit.editing.checks import CheckResult, command_check

EXAMPLE = re.compile(r"^[ \t]*>>> ", re.MULTILINE)
FEEDBACK_CHARS = 1500  # of doctest's report, shown to the model on a sampled redraw
TIMEOUT = 30.0  # seconds a candidate's examples may take: a loop the fix left is a failure
FAILED = "it fails the file's examples"


def has_examples(text: str, language: str | None) -> bool:
    """Whether `text` is Python with at least one `>>>` example to run."""
    return language == "python" and EXAMPLE.search(text) is not None


@contextmanager
def examples_check(
    path: Path, text: str, language: str | None, asked: bool
) -> Iterator[Callable[[str], CheckResult] | None]:
    """Where `asked` and `text` (the file at `path`) has examples: `check(candidate)`, which
    runs doctest on the candidate by this interpreter, as a `--test` command in a copy of the
    file's folder (`checks.command_check`); None otherwise."""
    if not (asked and has_examples(text, language)):
        yield None
        return
    command = f"{shlex.quote(sys.executable)} -m doctest {{file}}"
    with command_check(command, path, TIMEOUT) as check:
        yield check


def feedback(output: str) -> str:
    """What the model is told after an answer failed the examples: doctest's report, its end."""
    return (
        "Your previous answer fails the examples in the file's docstrings, which show what the "
        "code must do. doctest's report:\n```\n"
        f"{output[-FEEDBACK_CHARS:].strip()}\n```\nReturn the complete file with the code "
        "changed as asked and every other line exactly as it was."
    )
