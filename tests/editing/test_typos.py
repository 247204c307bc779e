"""An answer to "fix the typos" is kept to typos (editing/typos.py)."""

from __future__ import annotations

import pytest

from specedit.bench.tasks import load_tasks
from specedit.editing.typos import asks_for_typos_only, keep_to_typos, respelling_distance


@pytest.mark.parametrize(
    "instruction",
    [
        "Fix the typos.",
        "fix typos",
        "Fix the spelling mistakes; change nothing else.",
        "Correct the typos, nothing else.",
        "Please fix the typos in this README.",
        "Fix the typos and the doubled word.",
    ],
)
def test_an_instruction_of_typos_alone_is_recognised(instruction):
    assert asks_for_typos_only(instruction)


@pytest.mark.parametrize(
    "instruction",
    ["Fix the typos and make it shorter.", "Make the tone friendlier.", "fix the grammar"],
)
def test_an_instruction_that_asks_for_more_is_not(instruction):
    assert not asks_for_typos_only(instruction)


def test_the_respelling_distance_counts_a_swap_as_one():
    assert respelling_distance("teh", "the") == 1
    assert respelling_distance("arbitrairly", "arbitrarily") == 1
    assert respelling_distance("Maintaienrs", "maintainers") == 1  # case aside
    assert respelling_distance("quick", "slow") == 5


@pytest.mark.parametrize(
    ("original", "answer"),
    [
        ("It beuatiful.", "It beautiful."),  # respelt
        ("dont go", "don't go"),  # an apostrophe inside the word
        ("Upload the the archives", "Upload the archives"),  # a word written twice
        ("write thecat now", "write the cat now"),  # split
        ("with out it", "without it"),  # joined
        ("the python way", "the Python way"),  # case
    ],
)
def test_a_typo_fix_is_kept(original, answer):
    assert keep_to_typos(original, answer) == (answer, [])


@pytest.mark.parametrize(
    ("original", "answer", "put_back"),
    [
        # answers of the 1.5B to "Fix the typos" on the shipped READMEs
        ("Linux, macOS and Windows.", "Linux, macOS, and Windows.", [", -> (dropped)"]),
        ("From root of this repo", "From the root of this repo", ["the -> (dropped)"]),
        ("a\n\nRun the app.\n\nb", "a\n\nb", ["(nothing) -> Run the app."]),
        ("the quick fox", "the slow fox", ["slow -> quick"]),  # another word
        ("one line\n", "one line\nanother\n", ["another -> (dropped)"]),  # a line added
    ],
)
def test_what_a_typo_fix_does_not_make_goes_back(original, answer, put_back):
    text, corrections = keep_to_typos(original, answer)
    assert text == original
    assert [str(c) for c in corrections] == put_back


def test_a_typo_fix_stays_beside_a_change_that_goes_back():
    text, corrections = keep_to_typos("the the fox", "the fox.")
    assert text == "the fox"
    assert [str(c) for c in corrections] == [". -> (dropped)"]


def test_a_typo_fix_inside_a_larger_change_is_told_apart_from_the_rest():
    """The diff joins `tabels.` and the paragraph after it into one change: realigned, the
    respelt word stays and the paragraph comes back."""
    original = "It renders tabels.\n\nThat is all, and more.\n"
    text, corrections = keep_to_typos(original, "It renders tables, and more.\n")
    assert text == "It renders tables.\n\nThat is all, and more.\n"
    assert [str(c) for c in corrections] == ["(nothing) -> .\n\nThat is all"]


def test_a_put_back_change_says_where_it_was_in_the_answer():
    line = "two, three, and four"
    text, [correction] = keep_to_typos("one\ntwo, three and four\n", f"one\n{line}\n")
    assert text == "one\ntwo, three and four\n"
    assert (correction.line, correction.start, correction.end) == (1, 10, 11)
    assert line[10:11] == ","


def test_every_shipped_typo_task_s_expected_answer_is_a_typo_fix():
    """The rule must keep every change the suite's READMEs expect."""
    tasks = [task for task in load_tasks() if task.group == "doc"]
    assert tasks
    for task in tasks:
        assert asks_for_typos_only(task.instruction), task.id
        assert keep_to_typos(task.input, task.expected) == (task.expected, []), task.id


# --- wired into a rewrite ---------------------------------------------------------------------

DOC = "Rich works on Linux, macOS and Windows.\n\nIt renders tabels.\n\nThat is all.\n"
ANSWER = "Rich works on Linux, macOS, and Windows.\n\nIt renders tables.\n"


@pytest.mark.parametrize(
    ("instruction", "delivered"),
    [
        ("Fix the typos.", DOC.replace("tabels", "tables")),
        ("Fix the typos and make it shorter.", ANSWER),
    ],
)
def test_a_proofread_rewrite_of_typos_alone_keeps_to_them(
    tiny_model_dir, monkeypatch, instruction, delivered
):
    """The editor puts back what the answer changed beyond typos where the instruction asks
    for typos alone, and says so among the corrections; another instruction's answer stands."""
    from specedit.editing.editor import EditRequest, prepare
    from specedit.editing.local import execute
    from specedit.engine.events import Generation, Stats
    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")

    def generate_edit(lm, prepared, on_step=None, stop=None, timings=None, show_forced=True):
        tokens = lm.tokenizer(ANSWER + "```\n", add_special_tokens=False)["input_ids"]
        n = len(tokens)
        return Generation(tokens, "eos", Stats(new_tokens=n), [1.0] * n, [tokens[0]] * n)

    monkeypatch.setattr("specedit.editing.local.generate_edit", generate_edit)
    request = EditRequest(DOC, instruction, prompt="rewrite").steered(proofread=True, choices=True)
    result = execute(lm, prepare(lm, request))
    assert result.text == delivered
    assert bool(result.corrections) == (delivered != ANSWER)
