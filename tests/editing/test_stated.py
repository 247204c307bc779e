"""The calls an instruction or a docstring gives with the value each should give, and their
check."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import EXAMPLE_RUNS

from specedit.editing import stated
from specedit.editing.editor import Mode
from specedit.editing.examples import Examples, examples_check, judging, runnable
from specedit.editing.stated import Stated, docstring_examples, stated_examples

READ = [
    ("`median([1, 3, 5, 7])` gives 5.0, not 4.0.", [("median([1, 3, 5, 7])", "4.0")]),
    (
        "`dirname('/usr')` returns '' instead of '/', and `dirname('//x')` returns '/' instead "
        "of '//'. Deeper paths work.",
        [("dirname('/usr')", "'/'"), ("dirname('//x')", "'//'")],
    ),
    (
        "so `wrap('aaa bbb ccc', width=7)` gives ['aaa', 'bbb', 'ccc'] instead of "
        "['aaa bbb', 'ccc'].",
        [("wrap('aaa bbb ccc', width=7)", "['aaa bbb', 'ccc']")],
    ),
    (  # a bare call, no backticks
        "quantiles([1, 2, 3, 4, 5], n=4, method='inclusive') should be [2.0, 3.0, 4.0]",
        [("quantiles([1, 2, 3, 4, 5], n=4, method='inclusive')", "[2.0, 3.0, 4.0]")],
    ),
    ("`f(2)` must return b'ab' but gives b'a'", [("f(2)", "b'ab'")]),
    # What leaves a doubt is not read: a value in words, a call with no value, an exception.
    ("`hsv_to_rgb(0.75, 1.0, 1.0)` should be purple (0.5, 0.0, 1.0) but comes out blue", []),
    ("`b32encode(b'abc')` returns b'MFRG====', which decodes back to b'ab'", []),
    ("`unescape('&#x3e;')` raises ValueError.", []),
    ("Fix bugs in median.", []),
    ("`median` should be 4.0", []),  # a name, not a call
    pytest.param("`f(1)` should be " + "[1, " * 5000, [], id="no-value-in-VALUE_CHARS"),
    ("`load()` is slow. The cache should be None at the start.", []),  # another sentence's
    ("`split_words('a b c')` should return 3 words, not 2", []),  # words after the value
    ("`f(2)` should be 4 or more", []),
    ("`f(1)` should be 1,000", []),  # not the tuple (1, 0), nor 1
    ("`f(2)` returns 4, not 5", [("f(2)", "5")]),
    ("`is_even(2)` returns 1 instead of True", [("is_even(2)", "True")]),
    ("`f(2)` returns 4.0 instead of 4", []),  # the wrong value equals the right one
    ("`f(2)` should be 4  # not 5", [("f(2)", "4")]),  # a comment is not the value's
    pytest.param("`f(1)`" + " " * 10_000 + "x", [], id="a-long-run-of-spaces"),
]


@pytest.mark.parametrize("instruction,cases", READ)
def test_the_instruction_s_calls_and_values_are_read(instruction, cases):
    assert stated_examples(instruction) == [Stated(call, want) for call, want in cases]


def _documented(docstring: str) -> str:
    return f'def f(x):\n    """{docstring}"""\n    return x\n'


DOCSTRINGS = [
    (
        "Examples:\n    search([4, 1, 2]) == 2\n    search([5, 5]) == -1\n",
        [("search([4, 1, 2])", "2"), ("search([5, 5])", "-1")],
    ),
    # each arrow of the examples written outside doctest, bullets, a comment before or after
    (
        "* eat(5, 6, 10) -> [11, 4]\n- eat(1, 1, 1) → [2, 0]",
        [("eat(5, 6, 10)", "[11, 4]"), ("eat(1, 1, 1)", "[2, 0]")],
    ),
    ('avg(1, 5) => "0b11"\navg(7, 5) ==> -1', [("avg(1, 5)", '"0b11"'), ("avg(7, 5)", "-1")]),
    ("split('a b') ➞ ['a', 'b']", [("split('a b')", "['a', 'b']")]),
    (
        "count('aB')  # returns 1\ncheck('x.txt') # => 'Yes' (a letter first)",
        [("count('aB')", "1")],
    ),
    ("enc('hi') returns 'lm'", [("enc('hi')", "'lm'")]),
    ("odd(5) == [1, 5] # the sequence is 5, 16, 8, 4, 2, 1", [("odd(5)", "[1, 5]")]),
    ("case({'a': 1}) should return True.", [("case({'a': 1})", "True")]),
    (
        "get([\n  [1, 2],\n  [3, 1]\n], 1) == [(0, 0), (1, 1)]",
        [("get([\n  [1, 2],\n  [3, 1]\n], 1)", "[(0, 0), (1, 1)]")],
    ),
    # `=` as an arrow, a call mid-line, worked arithmetic before the value
    (
        "arrange([1,2,3]) = -1\nsimplify('1/5', '5/1') = True",
        [
            ("arrange([1,2,3])", "-1"),
            ("simplify('1/5', '5/1')", "True"),
        ],
    ),
    ("for pick(7, 34) == 34", [("pick(7, 34)", "34")]),
    ("f(1) == 2 and f(2) == 4", [("f(1)", "2"), ("f(2)", "4")]),
    ('fruit("5 a", 19) ->19 - 5 - 6 = 8', [('fruit("5 a", 19)', "8")]),
    ("double([1, 3, 2, 0]) == 1 + 9 + 0 + 0 = 10", [("double([1, 3, 2, 0])", "10")]),
    # sentences, read as an instruction's: a sentence may go on over a line break
    (
        'For example near("14.5") should\n    return 15 and near("-14.5") should return -15.',
        [('near("14.5")', "15"), ('near("-14.5")', "-15")],
    ),
    # what leaves a doubt is not read: a value in words, a formula, doctest's own lines (a
    # call that reads a name the file does not bind is read, and not run: below)
    ("simple(1, 4) => true\nhappy(a) => False", [("happy(a)", "False")]),
    ("f(x) returns the sum of x\ng(2) -> 19 - x = 8", []),
    # a function a formula defines: its `=` lines are the formula's values, not its returns
    (
        "tri(n) = 1 + n / 2, if n is even.\ntri(2) = 1 + (2 / 2) = 2\ntri(3) -> [1, 3, 2, 8]",
        [
            ("tri(3)", "[1, 3, 2, 8]"),
        ],
    ),
    (">>> f(1) == 2\nTrue\n... g(1) = 2", []),
]


@pytest.mark.parametrize("docstring,cases", DOCSTRINGS)
def test_a_docstring_s_examples_written_outside_doctest_are_read(docstring, cases):
    said = [Stated(call, want, "the docstring") for call, want in cases]
    assert docstring_examples(_documented(docstring)) == said


def test_a_function_s_examples_given_as_its_parameters_values_are_read():
    text = (
        "def rd(s, c):\n"
        '    """For c = "b", s = "ab" the result should be "a".\n'
        "    For s = 'x', c = 'y' the output should be 'x'\n"
        # what leaves a doubt is not read: a name not a parameter, one left out, not a literal
        "    For s = 'x', n = 1 the output should be 'x'\n"
        "    For s = 'x' the output should be 'x'\n"
        "    For s = 'x', c = y the output should be 'x'\n"
        "    For s = 'x', c = 'y', the sum of it will be 1 the output should be 'x'\n"
        '    """\n'
    )
    assert docstring_examples(text) == [
        Stated("rd('ab', 'b')", '"a"', "the docstring"),
        Stated("rd('x', 'y')", "'x'", "the docstring"),
    ]


def test_every_docstring_of_the_file_is_read_and_nothing_else():
    text = (
        '"""Module.\n\ntop(1) == 1\n"""\n\nclass C:\n    """C.\n\n    c(2) -> 2\n    """\n\n'
        '    def m(self):\n        """m(3) => 3"""\n\n# n(4) == 4\nx = """\ns(5) == 5\n"""\n'
    )
    assert [case.call for case in docstring_examples(text)] == ["top(1)", "c(2)", "m(3)"]
    assert docstring_examples("def broken(:\n") == []


FILE = (
    "import os\nfrom math import pi\n\n\ndef add(a, b):\n    return a - b\n\n\n"
    "class Box:\n    size = 1\n"
)


def _run(text: str, language: str, instruction: str = "") -> list[str]:
    """The calls `runnable` would run on `text`."""
    return [case.call for case in runnable(text, language, instruction)[1]]


def test_only_calls_of_what_the_file_defines_are_run():
    assert stated.top_level_names(FILE) == {"pi", "add", "Box"}  # not a module imported whole
    assert _run(FILE, "python", "`add(2, 3)` returns -1 instead of 5") == ["add(2, 3)"]
    assert _run(FILE, "python", "`add(len('ab'), pi)` should be 5.14159") == ["add(len('ab'), pi)"]
    assert _run(FILE, "python", "with `r = Box()`, `r.get(1)` should be 2") == []
    assert _run(FILE, "python", "`add(x, 1)` should be 4 where x is 3") == []
    assert _run(FILE, "python", "`os.path.basename('/a/')` should be 'a'") == []
    assert _run(FILE, "python", "`len('ab')` should be 2") == []  # nothing of the file
    assert _run(FILE, "text", "`add(2, 3)` returns -1 instead of 5") == []
    assert _run(FILE, "python", "add subtracts") == []
    assert _run(_documented("f(1) -> 1"), "python") == ["f(1)"]
    assert _run(_documented("f(a) -> 1"), "python") == []  # `a` is nothing of the file's
    assert runnable(">>> add(1, 1)\n" + FILE, "python", "") == (True, [], False)


@EXAMPLE_RUNS
def test_the_check_runs_each_call_on_the_candidate_and_says_what_it_gave(tmp_path, run):
    path = tmp_path / "add.py"
    path.write_text(FILE)
    instruction = "`add(2, 3)` returns -1 instead of 5, and `add(0.1, 0.2)` should be 0.3"
    with examples_check(path, FILE, "python", run, instruction=instruction) as check:
        wrong = check(FILE)
        right = check(FILE.replace("a - b", "a + b"))  # 0.1 + 0.2 is 0.3 within rounding
        raising = check(FILE.replace("a - b", "a / 0"))
    assert right.passed, right.output
    assert not wrong.passed
    assert "add(2, 3) returned -1; the instruction says 5" in wrong.output
    assert "add(2, 3) raised ZeroDivisionError: division by zero" in raising.output
    assert path.read_text() == FILE  # the candidates ran in a copy


@EXAMPLE_RUNS
def test_the_docstring_s_examples_are_run_and_said_to_be_its(tmp_path, run):
    text = _documented("Examples:\n    f(2) -> 3\n    f(0) -> 0\n")
    path = tmp_path / "f.py"
    path.write_text(text)
    assert _run(text, "python", "Fix bugs in f.") == ["f(2)", "f(0)"]
    with examples_check(path, text, "python", run, instruction="Fix f.") as check:
        wrong = check(text)
        right = check(text.replace("return x", "return x + x // 2"))
    assert right.passed, right.output
    assert "f(2) returned 2; the docstring says 3" in wrong.output
    assert "f(0)" not in wrong.output


@EXAMPLE_RUNS
def test_braces_in_an_instruction_do_not_read_as_the_command_s_placeholder(tmp_path, run):
    text = "def fill(s):\n    return s\n"
    path = tmp_path / "fill.py"
    path.write_text(text)
    instruction = "`fill('{file}')` should be 'x'"
    with examples_check(path, text, "python", run, instruction=instruction) as check:
        ran = check(text)
    assert not ran.passed
    assert "fill('{file}') returned '{file}'; the instruction says 'x'" in ran.output


def _checked(tmp_path, source: str, cases: list[Stated]) -> subprocess.CompletedProcess:
    path = tmp_path / "m.py"
    path.write_text(source)
    command = [sys.executable, "-P", "-m", "specedit.editing.stated", str(path)]
    return subprocess.run(
        [*command, stated.encode(cases)], capture_output=True, text=True, timeout=60
    )


def test_the_checker_does_not_run_the_file_s_main_block(tmp_path):
    source = "def one():\n    return 1\n\nif __name__ == '__main__':\n    raise SystemExit(9)\n"
    run = _checked(tmp_path, source, [Stated("one()", "1")])
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize(
    "source,report",
    [
        # a call that exits cannot pass by exiting 0, nor keep the next call from being run
        ("def one():\n    exit()\n\ndef two():\n    return 3\n", "two() returned 3"),
        ("import sys\nsys.exit(0)\n", "running the file raised SystemExit"),
        ("import sys\nsys.argv[1]\n", "running the file raised IndexError"),  # its only arg
    ],
)
def test_a_candidate_that_exits_fails_the_check(tmp_path, source, report):
    run = _checked(tmp_path, source, [Stated("one()", "1"), Stated("two()", "2")])
    assert run.returncode == 1
    assert report in run.stdout


@pytest.mark.parametrize(
    "got,want,equal",
    [
        (0.1 + 0.2, 0.3, True),
        (4, 4.0, True),
        (True, 1, False),  # a report that says True is not answered by 1
        (1, True, False),
        ([1.0, (2, 3)], [1.0, (2, 3)], True),
        ([1, 2], (1, 2), False),
        (4.5, 4.0, False),
        ("a", "b", False),
    ],
)
def test_values_compare_exactly_but_floats_within_rounding(got, want, equal):
    assert stated.same(got, want) is equal


def test_by_default_the_examples_judge_fixes_and_edits_alone():
    assert judging(Examples.CONFINED, Mode.FIX) is Examples.CONFINED
    assert judging(Examples.CONFINED, Mode.EDIT) is Examples.CONFINED
    assert judging(Examples.CONFINED, Mode.REWRITE) is Examples.OFF
    assert judging(Examples.CONFINED, Mode.APPLY) is Examples.OFF
    assert judging(Examples.ASKED, Mode.APPLY) is Examples.ASKED  # asked for: any edit
