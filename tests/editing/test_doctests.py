"""Doctest as the examples' check runs it: a comparison that expects nothing expects `True`."""

from __future__ import annotations

import doctest
import subprocess
import sys

from helpers import EXAMPLE_RUNS

from specedit.editing.doctests import ComparisonsParser
from specedit.editing.examples import examples_check

DOCSTRING = """
>>> f(1) == 2
>>> f(1) != 2
False
>>> f(1)
2
>>> print(f(1))
>>> [f(1)] == [2]  # a comment after it
"""


def test_a_comparison_that_expects_nothing_expects_true_and_nothing_else_changes():
    examples = ComparisonsParser().get_examples(DOCSTRING)
    assert [example.want for example in examples] == ["True\n", "False\n", "2\n", "", "True\n"]
    assert [example.want for example in doctest.DocTestParser().get_examples(DOCSTRING)] == [
        "",
        "False\n",
        "2\n",
        "",
        "",
    ]


FILE = 'def f(x):\n    """\n    >>> f(1) == 2\n    >>> f(2) == 3\n    """\n    return x + 1\n'


def test_run_as_a_module_it_passes_the_right_code_and_reports_the_wrong(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(FILE)
    command = [sys.executable, "-P", "-m", "specedit.editing.doctests", str(path)]
    right = subprocess.run(command, capture_output=True, text=True, timeout=60)
    path.write_text(FILE.replace("x + 1", "x + 2"))
    wrong = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (right.returncode, right.stdout) == (0, "")
    assert wrong.returncode == 1
    assert "Failed example:\n    f(1) == 2\nExpected:\n    True\nGot:\n    False" in wrong.stdout
    assert "***Test Failed*** 2 failures." in wrong.stdout


@EXAMPLE_RUNS
def test_both_runs_of_the_examples_read_such_a_comparison_so(tmp_path, run):
    path = tmp_path / "m.py"
    path.write_text(FILE)
    with examples_check(path, FILE, "python", run) as check:
        right = check(FILE)
        wrong = check(FILE.replace("x + 1", "x * 2"))  # f(1) is 2, f(2) is not 3
    assert right.passed, right.output
    assert not wrong.passed
    assert "f(2) == 3\nExpected:\n    True\nGot:\n    False" in wrong.output
    assert "f(1) == 2" not in wrong.output
