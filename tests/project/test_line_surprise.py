"""tools/line_surprise.py ranks a fix's line as docs/quality.md says it does."""

from __future__ import annotations

import itertools

from helpers import tool

surprise = tool("line_surprise")

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
    assert surprise.code_lines(SOURCE) == [0, 5, 7]


def test_the_fixed_lines_are_those_replaced_or_around_an_insertion():
    assert surprise.fixed_lines(SOURCE, SOURCE.replace("a - b", "a + b")) == {5}
    inserted = SOURCE.replace("    return", "    total += 0\n    return")
    assert surprise.fixed_lines(SOURCE, inserted) == {6, 7}


def test_a_line_scores_its_most_surprising_token_and_the_fix_is_ranked_among_code():
    pieces = [
        "def add(a, b):\n",
        '    """Their sum.\n\n    >>> add(1, 2)"""\n',
        "    # the sum\n",
    ]
    pieces += ["    total = a", " -", " b\n", "\n", "    return total\n"]
    ends = list(itertools.accumulate(map(len, pieces)))
    spans = list(zip([0, *ends[:-1]], ends, strict=True))  # each token's characters
    surprisal = [1.0, 9.0, 8.0, 0.5, 4.0, 0.2, 0.0, 2.0]
    scores = surprise.line_scores(spans, surprisal, SOURCE)
    assert scores == [1.0, 9.0, 0.0, 0.0, 8.0, 4.0, 0.0, 2.0]
    code = surprise.code_lines(SOURCE)
    assert surprise.rank_of_fix(scores, code, {5}) == 0  # the docstring's 9.0 is not code
    assert surprise.rank_of_fix(scores, code, {7}) == 1
    assert surprise.rank_of_fix(scores, code, {2}) is None
