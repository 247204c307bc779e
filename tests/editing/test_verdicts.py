"""What a candidate edit is worth without running it: unchanged, refused by the safety checks,
the prose changed alone, or the change the others agree on (`--samples N --vote`)."""

from __future__ import annotations

from helpers import MEAN_BROKEN as BROKEN
from helpers import MEAN_BUG as ORIGINAL
from helpers import MEAN_REFORMATTED as REFORMATTED
from helpers import MEAN_RIGHT as RIGHT
from helpers import MEAN_WRONG as WRONG

from specedit.editing import verdicts
from specedit.editing.editor import Mode


def judged(
    *texts: str, asked: str = "fix", instruction: str = "mean() is wrong"
) -> list[verdicts.Verdict]:
    unchanged = verdicts.unchanged_problem(asked, "python")
    return [verdicts.judge(ORIGINAL, text, instruction, "python", unchanged) for text in texts]


def test_an_unchanged_answer_is_wrong_for_a_fix_or_an_edit():
    assert judged(ORIGINAL)[0].problem == "unchanged, but a fix was asked for"
    assert judged(ORIGINAL, asked="edit")[0].problem == "unchanged, but a change was asked for"
    assert judged(ORIGINAL, asked="rewrite")[0].acceptable  # a clean document stays as it is
    spaced = ORIGINAL.replace("sum(values) * len", "sum(values)  *  len") + "\n\n"
    assert judged(spaced)[0].problem == "unchanged, but a fix was asked for"  # blanks only
    assert judged(spaced, asked="edit")[0].problem == "unchanged, but a change was asked for"
    # ... unless the instruction asks for blanks alone
    assert judged(spaced, asked="edit", instruction="remove the trailing spaces")[0].acceptable
    assert judged(spaced, asked="rewrite")[0].acceptable
    indented = ORIGINAL.replace("\nprint(", "\n    print(")  # indentation is code
    assert judged(indented)[0].problem != "unchanged, but a fix was asked for"
    assert judged(RIGHT)[0].acceptable


def test_python_whose_code_is_unchanged_is_unchanged_unless_the_prose_was_asked_for():
    """A docstring's quotes or a comment changed, and nothing the code does: as unchanged as
    the input, for a fix and an edit of code alike; an instruction about the prose, the typos
    or the layout may ask for just that."""
    documented = ORIGINAL.replace("def mean(values):\n", 'def mean(values):\n    """Mean."""\n')
    quoted = documented.replace('"""Mean."""', "'Mean.'")
    commented = documented.replace("\nprint(", "\n# mean of two\nprint(")
    for answer in (quoted, commented):
        assert not verdicts.judge(documented, answer, "mean() is wrong", "python", "x").acceptable
        for instruction in ("fix the typo in the comment", "reformat it", "use single quotes"):
            assert verdicts.judge(documented, answer, instruction, "python", "x").acceptable
        assert verdicts.judge(documented, answer, "mean() is wrong", "python", None).acceptable
    assert verdicts.same_code(documented, quoted) and verdicts.same_code(documented, commented)
    assert not verdicts.same_code(documented, documented.replace("*", "/"))
    assert not verdicts.same_code(documented, BROKEN)
    assert not verdicts.same_code(documented, "x = a" + "[0]" * 100_000 + "\n")  # too deep
    imported = "import math\n" + documented.replace('"""Mean."""\n', '"""Mean."""\n    import os\n')
    assert not verdicts.same_code(documented, imported)  # an import is code
    assert verdicts.same_code(documented, imported, imports=True)  # ... set aside
    assert not verdicts.same_code(documented, imported.replace("*", "/"), imports=True)


def test_an_answer_the_safety_checks_refuse_is_not_acceptable():
    (verdict,) = judged(BROKEN)
    assert not verdict.acceptable and "python" in verdict.problem.lower()


def test_the_change_ignores_how_lines_are_spaced():
    assert verdicts.change_of(ORIGINAL, RIGHT) == verdicts.change_of(ORIGINAL, REFORMATTED)
    assert verdicts.change_of(ORIGINAL, RIGHT) != verdicts.change_of(ORIGINAL, WRONG)
    assert verdicts.change_of(ORIGINAL, ORIGINAL) == frozenset()


def test_the_change_most_candidates_agree_on_wins():
    assert verdicts.choose(judged(WRONG, RIGHT, REFORMATTED), ORIGINAL) == 1
    assert verdicts.choose(judged(RIGHT, WRONG, REFORMATTED), ORIGINAL) == 0


def test_unacceptable_candidates_neither_win_nor_vote():
    # two unchanged answers agree with each other, but a fix must change something
    assert verdicts.choose(judged(ORIGINAL, ORIGINAL, WRONG), ORIGINAL) == 2
    assert verdicts.choose(judged(BROKEN, BROKEN, RIGHT), ORIGINAL) == 2


def test_a_tie_keeps_the_earliest_and_no_acceptable_one_keeps_the_first():
    assert verdicts.choose(judged(WRONG, RIGHT), ORIGINAL) == 0
    assert verdicts.choose(judged(ORIGINAL, BROKEN), ORIGINAL) == 0


def test_an_unchanged_answer_is_wrong_where_a_change_was_asked_for():
    edit = verdicts.unchanged_problem(Mode.of_template("variants/after/edit.toml"), "python")
    assert edit == verdicts.UNCHANGED_EDIT
    assert verdicts.unchanged_problem(Mode.APPLY, "python") is None
    # prose: "fix the spelling mistakes" on a clean file must leave it as it was
    assert verdicts.unchanged_problem(Mode.EDIT, "") is None
    assert verdicts.unchanged_problem(Mode.EDIT, "markdown") is None
    assert verdicts.unchanged_problem(Mode.FIX, "") == verdicts.UNCHANGED_FIX
