"""tools/line_surprise.py ranks a fix's line as docs/quality.md says it does."""

from __future__ import annotations

import importlib.util

from helpers import ROOT

spec = importlib.util.spec_from_file_location("line_surprise", ROOT / "tools/line_surprise.py")
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

SOURCE = (
    "def add(a, b):\n"  # 0
    '    """Their sum.\n'  # 1
    "\n"  # 2
    '    >>> add(1, 2)"""\n'  # 3
    "    # the sum\n"  # 4
    "    total = a - b\n"  # 5
    "\n"  # 6
    "    return total\n"  # 7
)


def test_only_code_counts_not_docstrings_comments_or_blanks():
    assert tool.code_lines(SOURCE) == [0, 5, 7]


def test_the_fixed_lines_are_those_replaced_or_around_an_insertion():
    assert tool.fixed_lines(SOURCE, SOURCE.replace("a - b", "a + b")) == {5}
    inserted = SOURCE.replace("    return", "    total += 0\n    return")
    assert tool.fixed_lines(SOURCE, inserted) == {6, 7}


def test_a_line_scores_its_most_surprising_token_and_the_fix_is_ranked_among_code():
    pieces = [
        b"def add(a, b):\n",
        b'    """Their sum.\n\n    >>> add(1, 2)"""\n',
        b"    # the sum\n",
    ]
    pieces += [b"    total = a", b" -", b" b\n", b"\n", b"    return total\n"]
    surprisal = [1.0, 9.0, 8.0, 0.5, 4.0, 0.2, 0.0, 2.0]
    scores = tool.line_scores(pieces, surprisal, SOURCE.encode())
    assert scores == [1.0, 9.0, 0.0, 0.0, 8.0, 4.0, 0.0, 2.0]
    code = tool.code_lines(SOURCE)
    assert tool.rank_of_fix(scores, code, {5}) == 0  # the docstring's 9.0 is not code
    assert tool.rank_of_fix(scores, code, {7}) == 1
    assert tool.rank_of_fix(scores, code, {2}) is None
