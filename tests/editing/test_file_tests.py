"""A Python file's own tests judge its candidates (editing/file_tests.py): the asserts of its
`__main__` block, its `test_*` functions, its TestCase classes; what they cannot run without
says nothing of the code."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import EXAMPLE_RUNS

from specedit.editing import file_tests, sandbox
from specedit.editing.examples import Examples, examples_check

AREA = "def area(w, h):\n    return w + h\n"
MAIN = AREA + '\n\nif __name__ == "__main__":\n    assert area(2, 3) == 6\n    print("ok")\n'
FUNCTIONS = AREA + "\n\ndef test_area():\n    assert area(2, 3) == 6\n"
CASES = (
    "import unittest\n\n\n"
    + AREA
    + "\n\nclass AreaTest(unittest.TestCase):\n    def test_area(self):\n"
    + "        self.assertEqual(area(2, 3), 6)\n"
)


@pytest.mark.parametrize(
    ("source", "tested"),
    [
        (MAIN, True),
        (FUNCTIONS, True),
        (CASES, True),
        (AREA + "\nif '__main__' == __name__:\n    assert area(1, 1) == 1\n", True),
        (AREA + "\nclass T(TestCase):\n    def test_one(self):\n        assert area(1, 1)\n", True),
        (AREA + "\nfrom unittest import TestCase\nclass T(TestCase):\n    pass\n", False),
        (AREA + "\nif __name__ == '__main__':\n    print(area(2, 3))\n", False),  # no assert
        (AREA + "\nif __name__ != '__main__':\n    assert area(1, 1) == 1\n", False),
        (AREA + "\ndef test_area(tmp_path):\n    assert tmp_path\n", False),  # a fixture's
        (AREA + "\ndef main():\n    assert area(1, 1) == 1\n", False),
        (AREA + "\nif __name__ == '__main__':\n    assert len(sys.argv) == 3\n", False),  # argv
        (AREA + "\nif __name__ == '__main__':\n    assert ArgumentParser().parse_args()\n", False),
        (AREA, False),
        ("def broken(:\n", False),
    ],
)
def test_what_counts_as_a_file_s_own_tests(source, tested):
    assert (file_tests.tests_in(source) > 0) is tested


def _checked(tmp_path, run: Examples, text: str, *candidates: str):
    path = tmp_path / "area.py"
    path.write_text(text)
    with examples_check(path, text, "python", run) as check:
        assert check is not None
        return [check(candidate) for candidate in candidates]


@EXAMPLE_RUNS
@pytest.mark.parametrize("text", [MAIN, FUNCTIONS, CASES], ids=["main", "functions", "cases"])
def test_the_file_s_tests_fail_the_bug_and_pass_the_fix(tmp_path, run, text):
    wrong, right = _checked(tmp_path, run, text, text, text.replace("w + h", "w * h"))
    assert not wrong.passed
    assert "AssertionError" in wrong.output or "5 != 6" in wrong.output, wrong.output
    assert right.passed, right.output


@EXAMPLE_RUNS
def test_the_main_block_runs_once_and_an_exit_counts_by_its_code(tmp_path, run):
    """Imported under its own name, the module does not run its block; run alone, the block's
    exit with 0 passes and with anything else fails."""
    counted = AREA + "\nRUNS = []\n\nif __name__ == '__main__':\n    RUNS.append(1)\n"
    counted += "    assert RUNS == [1]\n    assert area(2, 3) == 5\n    raise SystemExit(0)\n"
    passes, exits = _checked(tmp_path, run, counted, counted, counted.replace("(0)", "(3)"))
    assert passes.passed, passes.output
    assert not exits.passed


CONFINED = pytest.mark.skipif(not sandbox.available(), reason="no seccomp on this system")


@CONFINED
@pytest.mark.parametrize("needs", ["open('data.txt').read()", "input()"], ids=["file", "stdin"])
def test_tests_that_need_what_is_withheld_do_not_judge(tmp_path, needs):
    """Confined, a test that reads a data file (or its standard input) fails on every candidate
    for want of it: the input's tests are left out, and the docstring's examples still judge."""
    reading = FUNCTIONS + f"\n\ndef test_data():\n    assert {needs}\n"
    path = tmp_path / "area.py"
    path.write_text(reading)
    with examples_check(path, reading, "python", Examples.CONFINED) as check:
        assert check is None
    docstring = '    """\n    >>> area(2, 3)\n    6\n    """\n'
    documented = reading.replace("    return", docstring + "    return")
    with examples_check(path, documented, "python", Examples.CONFINED) as check:
        assert check is not None
        right = check(documented.replace("w + h", "w * h"))
        wrong = check(documented)
    assert right.passed, right.output
    assert not wrong.passed and "Failed example" in wrong.output


@CONFINED
def test_a_candidate_whose_tests_need_what_is_withheld_fails(tmp_path):
    fixed = FUNCTIONS.replace("w + h", "w * h")
    (result,) = _checked(
        tmp_path, Examples.CONFINED, FUNCTIONS, fixed.replace("assert", "open('x'); assert")
    )
    assert not result.passed
    assert result.returncode == sandbox.UNTESTABLE


def test_run_as_a_module_it_runs_the_file_s_tests(tmp_path):
    path = tmp_path / "area.py"
    command = [sys.executable, "-P", "-m", "specedit.editing.file_tests", str(path)]
    path.write_text(CASES.replace("w + h", "w * h"))
    right = subprocess.run(command, capture_output=True, text=True, timeout=60)
    path.write_text(CASES)
    wrong = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (right.returncode, right.stdout) == (0, "")
    assert wrong.returncode == 1
    assert "FAIL: test_area (area.AreaTest" in wrong.stdout and "5 != 6" in wrong.stdout


@CONFINED
def test_tests_that_do_not_end_in_time_still_judge():
    """A loop the bug leaves is what the tests show: the input's run times out, and a
    candidate that ends and passes is told from one that loops."""
    looping = FUNCTIONS.replace("    return w + h", "    while w:\n        pass")
    with sandbox.confined_check("area.py", looping, False, [], 2.0, tests=True) as check:
        assert check is not None
        assert check(looping).timed_out
        assert check(FUNCTIONS.replace("w + h", "w * h")).passed


@EXAMPLE_RUNS
@pytest.mark.parametrize("name", ["copy.py", "__main__.py"])
def test_a_file_named_as_a_loaded_module_or_main_runs_as_itself_once(tmp_path, run, name):
    """`copy.py` is not Python's `copy`, and `__main__.py`'s block runs once, not on import too."""
    counted = AREA + "\nRUNS = []\n\nif __name__ == '__main__':\n    RUNS.append(1)\n"
    counted += "    assert RUNS == [1]\n    assert area(2, 3) == 5\n"
    path = tmp_path / name
    path.write_text(counted)
    with examples_check(path, counted, "python", run) as check:
        assert check is not None
        right, wrong = check(counted), check(counted.replace("w + h", "w * h"))
    assert right.passed, right.output
    assert not wrong.passed


@EXAMPLE_RUNS
def test_a_candidate_that_deletes_a_test_fails_unless_removal_was_asked(tmp_path, run):
    path = tmp_path / "area.py"
    path.write_text(MAIN)
    deleted = MAIN.replace("    assert area(2, 3) == 6\n", "")
    with examples_check(path, MAIN, "python", run, instruction="Fix area.") as check:
        result = check(deleted)
    assert not result.passed
    assert "the answer has 0 of the file's 1 tests" in result.output
    with examples_check(path, MAIN, "python", run, instruction="Remove the assert.") as check:
        assert check(deleted.replace("w + h", "w * h")).passed


@CONFINED
def test_unittest_s_log_assertions_run_and_a_subtest_needing_a_file_cannot_judge():
    logs = (
        CASES.replace("import unittest\n", "import logging\nimport unittest\n")
        + "\n    def test_logs(self):\n        with self.assertLogs() as seen:\n"
    )
    logs += "            logging.warning('x')\n        self.assertEqual(len(seen.records), 1)\n"
    fixed = logs.replace("w + h", "w * h")
    with sandbox.confined_check("area.py", logs, False, [], 10.0, tests=True) as check:
        assert check is not None
        assert check(fixed).passed, check(fixed).output
    subtest = "\n    def test_data(self):\n        with self.subTest(1):\n            open('x')\n"
    with sandbox.confined_check("area.py", logs + subtest, False, [], 10.0, tests=True) as check:
        assert check is None  # the input's tests need a file: nothing else judges
