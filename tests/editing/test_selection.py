"""Choosing among candidate edits without tests (`--samples`), on recorded candidates."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import MEAN_BROKEN as BROKEN
from helpers import MEAN_BUG as ORIGINAL
from helpers import MEAN_REFORMATTED as REFORMATTED
from helpers import MEAN_RIGHT as RIGHT
from helpers import MEAN_WRONG as WRONG

from specedit.bench.setups import parse_selection
from specedit.editing import redraws, sandbox, selection, verdicts
from specedit.editing.editor import UNSTEERED, EditRequest, Mode
from specedit.editing.examples import Examples
from specedit.editing.first_change import first_change
from specedit.editing.selection import EXAMPLES_SAMPLES, STEPS, Samples
from specedit.engine.options import GREEDY, Sampling

told: list[str | None] = []  # the problem each draw was told of, for the last `draw`


def draw(answers: list[str | None], samples: int, vote: bool):
    told.clear()
    asked: list[int] = []

    def run(number: int, problem: str | None) -> str | None:
        asked.append(number)
        told.append(problem)
        return answers[number]

    def judge(text: str) -> verdicts.Verdict:
        return verdicts.judge(ORIGINAL, text, "mean() is wrong", "python", verdicts.UNCHANGED_FIX)

    chosen, seen = selection.draw(run, judge, ORIGINAL, samples, vote)
    return chosen, [v.text for v in seen], asked


def test_drawing_stops_at_the_first_acceptable_candidate():
    chosen, seen, asked = draw([ORIGINAL, BROKEN, WRONG, RIGHT], 4, vote=False)
    assert (chosen, asked) == (WRONG, [0, 1, 2])
    assert seen == [ORIGINAL, BROKEN, WRONG]
    assert told[0] is None and told[1] == verdicts.UNCHANGED_FIX and "python" in told[2].lower()
    assert draw([RIGHT, WRONG], 2, vote=False)[2] == [0]  # an acceptable first costs nothing


def test_without_an_acceptable_candidate_the_first_is_delivered():
    chosen, _, asked = draw([ORIGINAL, ORIGINAL, BROKEN], 3, vote=False)
    assert (chosen, asked) == (ORIGINAL, [0, 1, 2])


# A module whose first answer below jumps from `first`'s docstring to `second`'s like one,
# leaving out four lines (under the share the safety checks refuse) and the name `second`.
MODULE = (
    "".join(
        f'def {name}(x):\n    """Return x."""\n    y = x + {k}\n    return y - {k}\n\n\n'
        for k, name in enumerate(["first", "second", "third", "fourth", "fifth", "sixth"])
    )
    + "print(first(1), second(2))\n"
)
LOST_PLACE = MODULE.replace(
    '    y = x + 0\n    return y - 0\n\n\ndef second(x):\n    """Return x."""\n', ""
)


@pytest.mark.parametrize(
    ("instruction", "delivered"),
    [("first() is wrong", MODULE), ("remove the lines of first() that are wrong", LOST_PLACE)],
)
def test_without_an_acceptable_candidate_one_that_left_out_lines_is_delivered_last(
    instruction, delivered
):
    answers = [LOST_PLACE, MODULE]

    def judge(text: str) -> verdicts.Verdict:
        return verdicts.judge(MODULE, text, instruction, "python", verdicts.UNCHANGED_FIX)

    chosen, seen = selection.draw(lambda number, problem: answers[number], judge, MODULE, 2, False)
    assert "second" in seen[0].problem and seen[1].problem == verdicts.UNCHANGED_FIX
    assert chosen == delivered
    # where every candidate left lines out, the first is delivered, as where none did
    both = selection.draw(lambda number, problem: LOST_PLACE, judge, MODULE, 2, False)
    assert both[0] == LOST_PLACE


def test_voting_draws_every_candidate_and_skips_failed_edits():
    chosen, seen, asked = draw([WRONG, None, RIGHT, REFORMATTED], 4, vote=True)
    assert asked == [0, 1, 2, 3] and seen == [WRONG, RIGHT, REFORMATTED]
    assert told == [None] * 4  # votes are independent samples
    assert chosen == RIGHT
    assert draw([None, None], 2, vote=True)[0] is None


def test_extra_candidates_sample_at_low_temperature_with_their_own_seed():
    assert redraws.sampled(GREEDY, 0) is GREEDY
    second = redraws.sampled(GREEDY, 1)
    assert (second.temperature, second.top_p, second.seed) == (0.2, 0.95, 1)
    assert redraws.sampled(GREEDY, 2).seed == 2
    warm = Sampling(temperature=0.7, seed=5)
    assert redraws.sampled(warm, 2) == Sampling(temperature=0.7, seed=7)


def test_the_fix_template_is_known_by_name_or_path():
    # a request that names only its template is in the mode the template is for
    assert Mode.of_template("fix") is Mode.FIX
    assert Mode.of_template("variants/after/fix.toml") is Mode.FIX
    assert Mode.of_template("edit") is not Mode.FIX and Mode.of_template("think.toml") is None
    assert EditRequest("x", "y", prompt="variants/after/fix.toml").mode is Mode.FIX
    assert EditRequest("x", "y", prompt="fix", mode=Mode.EDIT).mode is Mode.EDIT  # the command's


DEFAULT = Samples(2, examples=Examples.CONFINED, checked=EXAMPLES_SAMPLES)  # the CLI's, no option


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [("1", Samples(1)), ("3", Samples(3)), ("vote5", Samples(5, vote=True))]
    + [("examples3", Samples(3, examples=Examples.ASKED))]
    + [("confined3", Samples(3, examples=Examples.CONFINED))]
    + [("default", DEFAULT)]
    + [("2-unchanged", Samples(2, without=frozenset({"unchanged"})))]
    + [("default-unchanged", replace(DEFAULT, without=frozenset({"unchanged"})))]
    + [("default-unchanged-stop", replace(DEFAULT, without=frozenset({"unchanged", "stop"})))]
    + [("default-unchanged-stop-short-rest", replace(DEFAULT, without=frozenset(STEPS)))],
)
def test_bench_selections_parse(spec, parsed):
    assert parse_selection(spec) == parsed


def test_where_the_examples_judge_the_candidates_up_to_checked_are_drawn():
    assert parse_selection("default").judged_by_examples().count == EXAMPLES_SAMPLES == 8
    assert parse_selection("examples3").judged_by_examples().count == 3


@pytest.mark.parametrize(
    "spec",
    ["0", "vote", "x3", "vote0", "-1", "examples", "votes3", "confined", "default2"]
    + ["default-", "default-look", "2-unchanged-unchanged", "unchanged", "unchanged-2"],
)
def test_bad_bench_selections_are_refused(spec):
    assert parse_selection(spec) is None


# --- `--samples` through the CLI, on the tiny model with chosen answers ---------------------

SOURCE = "def add(a, b):\n    return a - b\n"


def _answering(monkeypatch, answers: list[str], tokenizer, passes: dict | None = None) -> list:
    """Edit number k answers answers[k] after two real tokens; returns the prepared edits, so
    that a test sees how each candidate was asked for (its sampling, its forced start). The
    answer is recorded as the tokens of "xy", the `y` unsure with `z` a close second (the only
    branch point: the `x` has no other). `passes`: the post-processing passes said to have
    changed each answer, with its text before them."""
    from dataclasses import replace

    from specedit.editing import editor

    calls = []
    x, y, z = (tokenizer.encode(letter, add_special_tokens=False)[0] for letter in "xyz")

    def execute(lm, prepared, on_step=None, stop=None):
        calls.append(prepared)
        generation = editor.generate_edit(lm, replace(prepared, max_new_tokens=2), on_step)
        recorded = {"tokens": [x, y], "probabilities": [0.9, 0.4], "runners_up": [x, z]}
        generation = replace(generation, **recorded)
        answer = answers[len(calls) - 1]
        return editor.EditResult(answer, generation, prepared.prompt, before_passes=passes or {})

    monkeypatch.setattr("specedit.editing.local.execute", execute)
    return calls


def _fix(tmp_path, tiny_model_dir, *options: str):
    from typer.testing import CliRunner

    from specedit.cli import app

    file = tmp_path / "add.py"
    file.write_text(SOURCE)
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    result = CliRunner().invoke(app, ["fix", str(file), "add subtracts", *tiny, *options])
    return result, file


def test_an_unchanged_fix_draws_another_candidate(tmp_path, tiny_model_dir, tokenizer, monkeypatch):
    """The unchanged fix is redrawn from where it was least sure (its `y`, taking the `z`),
    greedy, with the same prompt; that answer is unsafe, so the next is sampled and told why;
    and an unchanged redraw, with no branch point left, is sampled and told it was unchanged."""
    fixed = SOURCE.replace("a - b", "a + b")
    unsafe = "def add(a, b):\n    return (a\n"
    calls = _answering(monkeypatch, [SOURCE, unsafe, SOURCE, fixed], tokenizer)
    result, _ = _fix(tmp_path, tiny_model_dir, "--samples", "4")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == fixed
    x, z = (tokenizer.encode(letter, add_special_tokens=False)[0] for letter in "xz")
    assert [p.request.steering.forced for p in calls] == [(), (x, z), (), ()]
    assert calls[0].request.steering.choices  # what the redraws branch on
    assert all(p.request.mode is Mode.FIX for p in calls)  # the command's
    assert [p.request.sampling.temperature for p in calls] == [0.0, 0.0, 0.2, 0.2]
    assert calls[0].request.feedback == calls[1].request.feedback == ""
    assert calls[1].prompt.ids == calls[0].prompt.ids  # the same prompt: its cache is reused
    assert "could not be used: " in calls[2].request.feedback
    assert "returned the file unchanged" in calls[3].request.feedback
    # the model reads it after the instruction
    assert "returned the file unchanged" in tokenizer.decode(calls[3].prompt.ids)
    assert (
        "4 candidates drawn, number 4 delivered (refused: unchanged, but a fix was" in result.stderr
    )


DOCUMENTED = 'def add(a, b):\n    """\n    >>> add(2, 3)\n    5\n    """\n    return a - b\n'
RIGHT_ADD = DOCUMENTED.replace("a - b", "a + b")


def test_with_examples_a_fix_that_fails_them_is_redrawn_and_one_that_passes_delivered(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """--examples runs the docstring's `>>>` lines on each candidate: the first answer fails
    them and is redrawn from where it was least sure, whole (the examples, not the first
    answer, say what the rest must be); the redraw passes and is delivered, its stats saying
    so."""

    file = tmp_path / "add.py"
    file.write_text(DOCUMENTED)
    wrong, fixed = DOCUMENTED.replace("a - b", "a * b"), DOCUMENTED.replace("a - b", "a + b")
    calls = _answering(monkeypatch, [wrong, fixed], tokenizer)
    stats = tmp_path / "stats.json"
    result = _run_fix(file, tiny_model_dir, "--examples", "--stats-file", str(stats))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == fixed
    x, z = (tokenizer.encode(letter, add_special_tokens=False)[0] for letter in "xz")
    assert [p.request.steering.forced for p in calls] == [(), (x, z)]
    assert calls[1].request.steering.rejoin is None  # delivered whole, not its first change
    assert "number 2 delivered (refused: it fails the examples (failed" in result.stderr
    assert json.loads(stats.read_text())["examples"] == "passed"
    assert file.read_text() == DOCUMENTED  # the examples ran on a copy


@pytest.mark.skipif(not sandbox.available(), reason="no seccomp on this system")
def test_by_default_the_examples_judge_each_candidate_confined(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """With no option the docstring's examples run confined (editing/sandbox.py): a first
    answer whose code writes a file when its example calls it fails them, writing nothing, and
    its redraw, which passes, is delivered. --no-examples runs nothing."""

    file = tmp_path / "add.py"
    file.write_text(DOCUMENTED)
    planted = tmp_path / "planted"
    writes = f"    open({str(planted)!r}, 'w').write('x')\n    return a + b"
    hostile, fixed = DOCUMENTED.replace("    return a - b", writes), RIGHT_ADD
    _answering(monkeypatch, [hostile, fixed], tokenizer)
    stats = tmp_path / "stats.json"
    result = _run_fix(file, tiny_model_dir, "--stats-file", str(stats))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == fixed and not planted.exists()
    assert "number 2 delivered (refused: it fails the examples (failed" in result.stderr
    assert json.loads(stats.read_text())["examples"] == "passed"

    _answering(monkeypatch, [hostile, fixed], tokenizer)
    result = _run_fix(file, tiny_model_dir, "--no-examples", "--stats-file", str(stats))
    assert result.exit_code == 0, result.stderr
    assert "examples" not in json.loads(stats.read_text())
    assert "fails the examples" not in result.stderr


def test_with_examples_a_call_the_instruction_gives_with_its_value_checks_each_candidate(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """A file without `>>>` examples, an instruction that says what a call should give: the
    first answer gives something else and is redrawn; the redraw gives it and is delivered."""
    file = tmp_path / "add.py"
    file.write_text(SOURCE)
    wrong, fixed = SOURCE.replace("a - b", "a * b"), SOURCE.replace("a - b", "a + b")
    _answering(monkeypatch, [wrong, fixed], tokenizer)
    instruction = "`add(2, 3)` returns -1 instead of 5"
    result = _run_fix(file, tiny_model_dir, "--examples", instruction=instruction)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == fixed
    assert "number 2 delivered (refused: it fails the examples (failed" in result.stderr
    assert file.read_text() == SOURCE


@pytest.mark.skipif(not sandbox.available(), reason="no seccomp on this system")
def test_by_default_the_file_s_own_tests_judge_each_candidate(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """A file whose `__main__` block asserts what its function gives, no docstring examples:
    the first answer fails the block's assert and is redrawn; the redraw passes and is
    delivered."""
    tested = SOURCE + "\n\nif __name__ == '__main__':\n    assert add(2, 3) == 5\n"
    file = tmp_path / "add.py"
    file.write_text(tested)
    wrong, fixed = tested.replace("a - b", "a * b"), tested.replace("a - b", "a + b")
    _answering(monkeypatch, [wrong, fixed], tokenizer)
    result = _run_fix(file, tiny_model_dir)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == fixed
    assert "number 2 delivered (refused: it fails the examples (failed (exit 1): Assertion" in (
        result.stderr
    )


def test_with_examples_that_no_candidate_passes_what_a_draw_without_them_picks_is_delivered(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """Eight candidates by default: the first, a redraw from its first doubt, the function
    written afresh (here as it was: unchanged), then five sampled and shown doctest's report
    on the last that failed the examples; none passes, so the examples tell nothing and the
    first is delivered, as without them, with a warning."""
    file = tmp_path / "add.py"
    file.write_text(DOCUMENTED)
    operators = ("*", "/", "%", "//", "**", "&", "|")
    answers = [DOCUMENTED.replace("a - b", f"a {op} b") for op in operators]
    calls = _answering(monkeypatch, [*answers[:2], DOCUMENTED, *answers[2:]], tokenizer)
    result = _run_fix(file, tiny_model_dir, "--examples")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == answers[0] and len(calls) == 8
    assert calls[2].request.prompt == "afresh"
    for sampled in calls[3:]:
        assert "Failed example" in sampled.request.feedback  # doctest's own report
    assert "no candidate passes the examples; delivering" in result.stderr


def test_with_examples_a_fix_whose_first_two_fail_them_gets_its_function_written_afresh(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """After the first answer and its redraw fail the examples, the function the
    instruction names is written from the file up to the end of its docstring (its body left
    out); the answer's body takes the old one's place, indented as it was, and it passes and
    is delivered with the file's docstring kept, the stats naming it. Without a function the
    instruction names, the third candidate is the sampled redraw, as before."""

    file = tmp_path / "add.py"
    file.write_text(DOCUMENTED)
    wrong = [DOCUMENTED.replace("a - b", f"a {op} b") for op in "*/"]
    written = 'def add(a, b):\n  """Add."""\n  total = a + b\n  return total\n'
    calls = _answering(monkeypatch, [*wrong, written], tokenizer)
    stats = tmp_path / "stats.json"
    result = _run_fix(file, tiny_model_dir, "--examples", "--stats-file", str(stats))
    assert result.exit_code == 0, result.stderr
    fixed = DOCUMENTED.replace("    return a - b", "    total = a + b\n    return total")
    assert result.stdout == fixed
    assert "add() written afresh from its signature and docstring passes" in result.stderr
    assert json.loads(stats.read_text())["afresh"] == "add"
    asked = calls[2].request
    assert (asked.prompt, asked.text) == ("afresh", DOCUMENTED.removesuffix("    return a - b\n"))
    assert "`add`" in asked.instruction and "add subtracts" in asked.instruction
    assert "number 3 delivered" in result.stderr

    calls = _answering(monkeypatch, [*wrong, written], tokenizer)
    result = _run_fix(file, tiny_model_dir, "--examples", instruction="the sum is wrong")
    assert [c.request.prompt for c in calls] == ["fix", "fix", "fix"]


LONG = (
    'def add(a, b):\n    """\n    >>> add(2, 3)\n    5\n    """\n    total = 0\n'
    "    for value in (a, b):\n        total -= value\n    result = total\n    return result\n"
)


@pytest.mark.skipif(not sandbox.available(), reason="no seccomp on this system")
def test_a_body_written_afresh_may_be_shorter_where_it_passes_the_examples(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """The function written afresh replaces its body alone, so the lines it drops are not an
    answer losing its place: where it passes the examples it is delivered and written (the
    delivery reading the same judgement); where it fails them it is refused for the lines it
    drops, and not delivered in their stead."""
    file = tmp_path / "add.py"
    file.write_text(LONG)
    wrong = [LONG.replace("total -= value", f"total {op}= value") for op in "*/"]
    short = 'def add(a, b):\n    """Add."""\n    return a + b\n'
    _answering(monkeypatch, [*wrong, short], tokenizer)
    result = _run_fix(file, tiny_model_dir, "-i")  # no option: the examples run confined
    assert result.exit_code == 0, result.stderr
    head = LONG[: LONG.index("    total = 0")]
    assert file.read_text() == head + "    return a + b\n"
    assert "number 3 delivered" in result.stderr

    file.write_text(LONG)
    wrong_short = short.replace("a + b", "a * b")
    _answering(monkeypatch, [*wrong, wrong_short, *wrong * 2, wrong[0]], tokenizer)
    result = _run_fix(file, tiny_model_dir)
    assert result.exit_code == 0, result.stderr
    # the third, refused for both
    assert "fails the examples (failed (exit 1): " in result.stderr
    assert "), and the edit drops 4 of 10 non-blank lines" in result.stderr
    assert result.stdout == wrong[0]  # the first, as the draw without them delivers
    assert "no candidate passes the examples" in result.stderr


def test_examples_are_run_only_where_the_file_has_some_and_never_on_stdin(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    file = tmp_path / "add.py"
    file.write_text(SOURCE)
    fixed = SOURCE.replace("a - b", "a + b")
    _answering(monkeypatch, [fixed, SOURCE], tokenizer)
    result = _run_fix(file, tiny_model_dir, "--examples")
    assert result.exit_code == 0 and result.stdout == fixed, result.stderr
    assert "no >>> examples and no call with its value in a docstring" in result.stderr
    for options, message in [
        (("--test", "true"), "--examples and --test both check candidates"),
        (("--samples", "1"), "--examples chooses among candidates"),
    ]:
        result = _run_fix(file, tiny_model_dir, "--examples", *options)
        assert result.exit_code == 2 and message in result.stderr
    result = _run_fix(Path("-"), tiny_model_dir, "--examples")
    assert result.exit_code == 2 and "not stdin" in result.stderr


def _run_fix(file, tiny_model_dir, *options: str, instruction: str = "add subtracts"):
    from typer.testing import CliRunner

    from specedit.cli import app

    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    return CliRunner().invoke(app, ["fix", str(file), instruction, *tiny, *options])


def test_an_unchanged_edit_is_redrawn_from_where_it_was_least_sure(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """An edit asks for a change as a fix does: an unchanged answer is redrawn from its branch
    point, then sampled and told that the instruction asks for a change; a changed answer is
    delivered as it is (no second look for an edit)."""
    from typer.testing import CliRunner

    from specedit.cli import app

    file = tmp_path / "add.py"
    file.write_text(SOURCE)
    other = SOURCE.replace("a - b", "a * b")
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    calls = _answering(monkeypatch, [SOURCE, SOURCE, other], tokenizer)
    result = CliRunner().invoke(
        app, ["edit", str(file), "make add multiply", *tiny, "--samples", "3"]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == other
    x, z = (tokenizer.encode(letter, add_special_tokens=False)[0] for letter in "xz")
    assert [p.request.steering.forced for p in calls] == [(), (x, z), ()]
    assert calls[0].request.steering.choices and not calls[0].request.steering.rejoin_input
    assert all(p.request.mode is Mode.EDIT for p in calls)
    assert "the instruction above asks for a change" in calls[2].request.feedback
    assert "(refused: unchanged, but a change was asked for" in result.stderr
    calls = _answering(monkeypatch, [other, SOURCE], tokenizer)
    result = CliRunner().invoke(app, ["edit", str(file), "make add multiply", *tiny])
    assert result.stdout == other and len(calls) == 1


def test_an_edit_that_removes_a_definition_left_alone_is_redrawn_from_its_doubt(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """An edit whose answer writes its new function over one the instruction leaves alone
    (editing/removed.py) is redrawn from its branch point, as an unchanged edit is; where every
    candidate does so, the first is delivered with a warning that says what it removed."""
    from typer.testing import CliRunner

    from specedit.cli import app

    file = tmp_path / "ops.py"
    two = SOURCE + "\n\ndef sub(a, b):\n    return a - b\n"
    file.write_text(two)
    over = SOURCE + "\n\ndef mul(a, b):\n    return a * b\n"
    added = two + "\n\ndef mul(a, b):\n    return a * b\n"
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    command = ["edit", str(file), "Add a function `mul(a, b)`.", *tiny]
    calls = _answering(monkeypatch, [over, added], tokenizer)
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == added
    x, z = (tokenizer.encode(letter, add_special_tokens=False)[0] for letter in "xz")
    assert [p.request.steering.forced for p in calls] == [(), (x, z)]
    assert "(refused: it removes `sub`, which the instruction does not ask to remove)" in (
        result.stderr
    )
    _answering(monkeypatch, [over, over], tokenizer)
    stats = tmp_path / "stats.json"
    result = CliRunner().invoke(app, [*command, "--stats-file", str(stats)])
    assert result.exit_code == 0 and result.stdout == over, result.stderr
    assert f"warning: {file}: it removes `sub`, which the instruction" in result.stderr
    assert json.loads(stats.read_text())["removed"] == ["sub"]


# An edit of add.py asked to write `mul` too: the answer that leaves it out, and the one that
# writes it.
PART = SOURCE.replace("a - b", "a + b")
WITH_MUL = PART + "\n\ndef mul(a, b):\n    return a * b\n"


def _edit_ops(tmp_path, tiny_model_dir, instruction: str) -> tuple[Path, list[str]]:
    """ops.py (SOURCE), and the command that edits it so on the tiny model."""
    file = tmp_path / "ops.py"
    file.write_text(SOURCE)
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    return file, ["edit", str(file), instruction, *tiny]


def test_an_edit_that_leaves_out_a_name_it_was_asked_for_is_delivered_with_a_warning(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """An edit whose answer never writes a new name its instruction writes as code
    (editing/asked.py) is delivered as it is, with no other candidate drawn (told, the model
    leaves it out again), and a warning and the stats say what it left out."""
    from typer.testing import CliRunner

    from specedit.cli import app

    file, command = _edit_ops(tmp_path, tiny_model_dir, "Fix add and write mul(a, b) beside it.")
    part, whole = PART, WITH_MUL
    stats = tmp_path / "stats.json"
    calls = _answering(monkeypatch, [part, whole], tokenizer)
    result = CliRunner().invoke(app, [*command, "--stats-file", str(stats)])
    assert result.exit_code == 0 and result.stdout == part, result.stderr
    assert len(calls) == 1
    assert f"warning: {file}: the answer never writes `mul`, which the instruction" in (
        result.stderr
    )
    assert json.loads(stats.read_text())["absent"] == ["mul"]
    _answering(monkeypatch, [whole], tokenizer)
    result = CliRunner().invoke(app, [*command, "--stats-file", str(stats)])
    assert result.stdout == whole and "never writes" not in result.stderr
    assert "absent" not in json.loads(stats.read_text())


def test_the_sentences_naming_what_an_edit_left_out_are_asked_for_alone_of_its_answer(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """Where the instruction has other sentences too, the ones that name what the answer
    never writes are asked for on their own, of that answer, plainly; their answer is
    delivered where it could be right and writes the name (the stats name the step), else
    the first, with the warning."""
    from typer.testing import CliRunner

    from specedit.cli import app

    instruction = "Make add add. Also write `mul(a, b)` beside it, multiplying the two."
    _, command = _edit_ops(tmp_path, tiny_model_dir, instruction)
    # a line of the sentence asked for alone, in the answer, is not the prompt's own words
    part, whole = PART, WITH_MUL + "# Also write `mul(a, b)` beside it, multiplying the two.\n"
    stats = tmp_path / "stats.json"
    calls = _answering(monkeypatch, [part, whole], tokenizer)
    result = CliRunner().invoke(app, [*command, "--stats-file", str(stats)])
    assert result.exit_code == 0 and result.stdout == whole, result.stderr
    assert [p.request.text for p in calls] == [SOURCE, part]
    assert calls[1].request.instruction == instruction.removeprefix("Make add add. ")
    assert calls[1].request.steering == UNSTEERED and calls[1].request.sampling.greedy
    assert "asked for alone, it was made" in result.stderr and "never writes" not in result.stderr
    assert "rest" in json.loads(stats.read_text())["passes"]
    calls = _answering(monkeypatch, [part, part.replace("a + b", "b + a")], tokenizer)
    result = CliRunner().invoke(app, command)
    assert result.stdout == part and len(calls) == 2
    assert "the answer never writes `mul`" in result.stderr


def test_a_raise_an_edit_left_out_is_asked_for_alone_and_warned_of_where_still_left_out(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """An exception the instruction asks to be raised that the answer raises nowhere new
    (editing/asked.py) has its sentence asked for alone, as a name left out has; what still
    adds no raise is warned of."""
    from typer.testing import CliRunner

    from specedit.cli import app

    instruction = "Make add add. Adding None should raise TypeError."
    _, command = _edit_ops(tmp_path, tiny_model_dir, instruction)
    checked = PART.replace(
        "    return", "    if a is None or b is None:\n        raise TypeError\n    return"
    )
    calls = _answering(monkeypatch, [PART, checked], tokenizer)
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0 and result.stdout == checked, result.stderr
    assert calls[1].request.instruction == "Adding None should raise TypeError."
    assert "asked for alone, it was made" in result.stderr
    _answering(monkeypatch, [PART, PART], tokenizer)
    result = CliRunner().invoke(app, command)
    assert result.stdout == PART
    assert "the answer adds no `raise TypeError`, which the instruction asks for" in result.stderr


def test_a_changed_fix_or_edit_is_delivered_with_no_other_candidate_drawn(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """By default a fix or an edit that changed the file, acceptably, is delivered as it is:
    no second candidate is drawn."""
    from typer.testing import CliRunner

    from specedit.cli import app

    first, other = SOURCE.replace("a - b", "a * b"), SOURCE.replace("a - b", "a + b")
    calls = _answering(monkeypatch, [first, other], tokenizer)
    result, _ = _fix(tmp_path, tiny_model_dir)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == first and len(calls) == 1
    assert "candidates drawn" not in result.stderr
    calls = _answering(monkeypatch, [first, other], tokenizer)
    file = tmp_path / "add.py"
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    result = CliRunner().invoke(app, ["edit", str(file), "make add multiply", *tiny])
    assert result.exit_code == 0 and result.stdout == first and len(calls) == 1


def test_a_changed_fix_is_delivered_alone_and_an_unchanged_one_redrawn_from_its_doubt():
    """An acceptable first fix is delivered with no other candidate drawn; an unchanged one is
    redrawn from its branch point, greedy, or, with that step left out (`Samples.without`,
    the bench's ablation), sampled and told so."""
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    original = "def f():\n    return 0\n"
    fixed, other = original.replace("0", "1"), original.replace("0", "2")

    def drawn(answers: list[str], without: set[str]) -> tuple[str, list[EditRequest]]:
        given, asked = iter(answers), []

        def run(request: EditRequest) -> EditResult:
            asked.append(request)
            generation = Generation([0, 1], "eos", Stats(), [0.9, 0.4], [0, 2])
            return EditResult(next(given), generation, EditPrompt([], "```", original, 0, 0))

        request = EditRequest(original, "f returns the wrong value", prompt="fix")
        decode = lambda tokens: "".join("abc"[t] for t in tokens)  # noqa: E731
        samples = selection.Samples(2, without=frozenset(without))
        return selection.draw_edits(run, request, str, samples, decode).chosen.text, asked

    text, asked = drawn([fixed, other], set())
    assert text == fixed and len(asked) == 1
    assert asked[0].steering.rejoin_input  # a fix's first stops once its change is made
    assert not drawn([fixed], {selection.FIRST_STOP})[1][0].steering.rejoin_input
    text, asked = drawn([original, other], set())
    assert not asked[1].steering.rejoin_input  # a redraw rejoins the first answer instead
    assert text == other and asked[1].steering.forced and asked[1].sampling.greedy
    text, asked = drawn([original, other], {selection.UNCHANGED_REDRAWS})
    assert text == other and not asked[1].steering.forced and not asked[1].sampling.greedy
    assert "returned the file unchanged" in asked[1].feedback


def test_the_part_left_out_is_not_asked_for_alone_when_voting_or_left_out():
    """`Drawing.rest` is a step of the default draw: `--vote` and the bench's `-rest` leave it
    out, and the answer that left the part out is delivered as it is."""
    from specedit.editing.editor import EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    def drawn(samples: Samples) -> list[EditRequest]:
        asked = []

        def run(request: EditRequest) -> EditResult:
            asked.append(request)
            generation = Generation([0, 1], "eos", Stats(), [0.9, 0.4], [0, 2])
            answer = WITH_MUL if len(asked) > 1 else PART
            return EditResult(answer, generation, EditPrompt([], "```", request.text, 0, 0))

        instruction = "Make add add. Also write `mul(a, b)`."
        request = EditRequest(SOURCE, instruction, prompt="edit", language="python")
        decode = lambda tokens: "".join("abc"[t] for t in tokens)  # noqa: E731
        assert selection.draw_edits(run, request, str, samples, decode).delivered is not None
        return asked

    assert [r.instruction for r in drawn(Samples(2))][1:] == ["Also write `mul(a, b)`."]
    assert len(drawn(Samples(2, without=frozenset({selection.REST})))) == 1
    assert all(r.instruction.startswith("Make") for r in drawn(Samples(2, vote=True)))


def test_a_fix_s_branch_redraw_keeps_its_first_change_only():
    """Going on from its branch, a fix's redraw often changes more than the line it branched
    on; its first change is delivered (changes up to CHANGE_GAP unchanged lines apart are
    one), the rest as the first answer had it. An edit's redraw is delivered whole: a
    translation or a rename changes many places."""
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    original = "".join(f"x{i} = {i}\n" for i in range(12))
    redraw = original.replace("x1 = 1", "x1 = 10").replace("x3 = 3", "x3 = 30")
    redraw = redraw.replace("x9 = 9", "x9 = 90")  # 5 unchanged lines after the x3 change

    def delivered(prompt: str) -> str:
        answers = iter([original, redraw])
        asked.clear()

        def run(request: EditRequest) -> EditResult:
            asked.append(request)
            generation = Generation([0, 1], "eos", Stats(), [0.9, 0.4], [0, 2])
            return EditResult(next(answers), generation, EditPrompt([], "```", original, 0, 0))

        request = EditRequest(original, "x1 and x3 are wrong", prompt=prompt, language="python")
        decode = lambda tokens: "".join("abc"[t] for t in tokens)  # noqa: E731
        return selection.draw_edits(run, request, str, selection.Samples(2), decode).chosen.text

    asked: list[EditRequest] = []
    assert delivered("fix") == redraw.replace("x9 = 90", "x9 = 9")
    # the fix's redraw may stop once its first change is made (editing/first_change.py)
    assert [r.steering.rejoin for r in asked] == [None, original] and asked[1].steering.forced
    assert delivered("edit") == redraw
    assert [r.steering.rejoin for r in asked] == [None, None] and asked[1].steering.forced
    assert first_change(original, original) == original


def test_a_branch_redraw_keeps_the_first_candidate_s_statement():
    """A template that has the model state the change first asks once: the branch redraw of an
    unchanged fix goes on from the same statement (and so the same prompt), a sampled redraw,
    told why the last one failed, states it anew."""
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    pieces = ["a", "b", "c"]
    asked: list[EditRequest] = []

    def run(request: EditRequest) -> EditResult:
        asked.append(request)
        said = request.steering.statement or f"statement {len(asked)}"
        generation = Generation([0, 1], "eos", Stats(), [0.9, 0.4], [0, 2])
        return EditResult(SOURCE, generation, EditPrompt([], "```", SOURCE, 0, 0), said)

    request = EditRequest(SOURCE, "add subtracts", prompt="fix")
    decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
    selection.draw_edits(run, request, lambda text: text, selection.Samples(3), decode)
    assert [r.steering.forced for r in asked] == [(), (0, 2), ()]
    assert [r.steering.statement for r in asked] == [None, "statement 1", None]
    assert asked[2].feedback


def test_an_answer_that_copies_the_prompt_s_own_words_is_redrawn_before_them():
    """A docstring that paraphrases the instruction goes on with the prompt's next sentence,
    then the answer ends: it is wrong whatever the safety checks say, and redrawn from the
    least sure token between the line before the copied sentence and its first word, passing
    over an other token that is the same word otherwise ended."""
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    closing = "Return the complete edited file and nothing else."
    vocabulary = [
        "def f():\n",
        '    """Return x.\n\n',
        "    ",
        "Return",
        '    """\n',
        " Returns",
        f" {closing.removeprefix('Return ')}\n",
        "x = 1\n",
        "```\n\nEdit this file: ",
        "add f",
        f"\n\n{closing}",
    ]
    decode = lambda tokens: "".join(vocabulary[t] for t in tokens)  # noqa: E731
    original = "x = 1\n"
    prompt = EditPrompt([7, 8, 9, 10], "```", original, 0, 1)
    leaked = [0, 1, 2, 3, 6]
    answers = iter([decode(leaked), 'def f():\n    """Return x."""\n    return 1\n'])
    asked: list[EditRequest] = []

    def run(request: EditRequest) -> EditResult:
        asked.append(request)
        probabilities, runners_up = [1.0, 0.6, 1.0, 0.4, 1.0], [0, 4, 2, 5, 6]
        generation = Generation(leaked, "eos", Stats(), probabilities, runners_up)
        return EditResult(original + next(answers), generation, prompt)

    request = EditRequest(original, "add f", prompt="edit", language="python")
    drawn = selection.draw_edits(run, request, str, selection.Samples(2), decode)
    assert [r.steering.forced for r in asked] == [(), (0, 4)]
    assert drawn.problems == [f"{verdicts.PROMPT_WORDS} ({closing!r})"]
    assert drawn.chosen.text.endswith("return 1\n")
    words = decode(prompt.ids[1:]).replace("add f", "")
    assert verdicts.copied_from_prompt(f"# {closing}\n", "", words) == closing
    assert verdicts.copied_from_prompt(f"# {closing}\n", closing, words) is None  # the input's
    assert verdicts.copied_from_prompt("Edit this file:\n", "", words) is None  # too short


TWINS = (
    'def a(x):\n    """Add one.\n\n    Works on ints.\n    """\n    return x + 2\n\n\n'
    'def b(x):\n    """Take one.\n\n    Works on ints.\n    """\n    return a(x) - 2\n'
    "\n\nprint(b(1))\n"
)


@pytest.mark.parametrize(
    ("instruction", "mode", "redrawn"),
    [
        ("a() adds two", "fix", True),  # the first change kept, the rest the first answer's
        ("a() adds two", "edit", True),  # delivered as the redraw wrote it
        ("a() adds two; remove b()", "fix", False),  # left out as asked: sampled
    ],
)
def test_an_answer_that_left_out_lines_is_redrawn_from_the_line_after_them(
    instruction, mode, redrawn
):
    """Copying `a`'s docstring, the model went on after `b`'s, which ends alike: `a`'s body
    and `b`'s head are lost, and the answer is refused. It is redrawn from where it was least
    sure on the line it wrote after the gap, greedy, taking the token it could have gone on
    with there, unless the instruction asks for a removal: then only `b` used undefined
    refuses it, and with no choice on that line it is sampled again."""
    from specedit.editing.editor import EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    head = TWINS[: TWINS.index("    return x + 2")]
    vocabulary = [head, "   ", " return", " a(x) - 2\n", " x + 1\n", "\n\nprint(b(1))\n"]
    decode = lambda tokens: "".join(vocabulary[t] for t in tokens)  # noqa: E731
    tokens = [0, 1, 2, 3, 5]
    lost = decode(tokens)
    right = TWINS.replace("x + 2", "x + 1")
    answers = iter([lost, right])
    asked: list[EditRequest] = []

    def run(request: EditRequest) -> EditResult:
        asked.append(request)
        generation = Generation(tokens, "eos", Stats(), [1, 1, 0.9, 0.5, 1], [0, 1, 2, 4, 5])
        return EditResult(next(answers), generation, EditPrompt([], "```", TWINS, 0, 0))

    request = EditRequest(TWINS, instruction, prompt=mode, language="python")
    drawn = selection.draw_edits(run, request, str, selection.Samples(2), decode)
    refused = drawn.problems[0]
    if redrawn:
        assert refused.startswith("the edit drops 5 of 11 non-blank lines")
        assert [r.steering.forced for r in asked] == [(), (0, 1, 2, 4)]
        assert asked[1].sampling.greedy and drawn.chosen.text == right
        assert asked[1].steering.rejoin == (lost if mode == "fix" else None)
    else:
        assert "'b', which nothing defines" in refused
        assert not asked[1].steering.forced and not asked[1].sampling.greedy


def test_branch_points_take_the_second_choice_where_the_answer_was_least_sure():
    """Least sure first; an other token that writes the same characters (`ab` for `a` then
    `b`), only other spaces, or nothing (a special token) is passed over."""
    from specedit.editing.branches import branch_points

    pieces = ["a", "b", "ab", " c", "c", "d", "", "e"]  # id -> text; id 6 is special

    def decode(tokens: list[int]) -> str:
        return "".join(pieces[t] for t in tokens)

    tokens = [0, 1, 4, 5]  # "abcd"
    probabilities = [0.5, 0.95, 0.6, 0.7]
    runners_up = [2, 5, 3, 6]  # "ab" (same text), "d", " c" (spaces only), special
    assert branch_points(tokens, probabilities, runners_up, decode, 3) == [(0, 5)]
    probabilities[1] = 0.4
    runners_up[2] = 7
    assert branch_points(tokens, probabilities, runners_up, decode, 3) == [(0, 5), (0, 1, 7)]
    assert branch_points(tokens, probabilities, runners_up, decode, 1) == [(0, 5)]


def test_a_branch_point_may_write_the_start_of_the_copied_token():
    """` <` where ` <=` was copied: the model rarely writes `=` next, so the branch can change
    the answer; ` <= h` for ` <=` (the same characters and more) cannot."""
    from specedit.editing.branches import branch_points

    pieces = ["lo", " <=", " hi", " <", " <= h", "i"]

    def decode(tokens: list[int]) -> str:
        return "".join(pieces[t] for t in tokens)

    tokens, probabilities = [0, 1, 2], [0.9, 0.5, 0.8]  # "lo <= hi"
    assert branch_points(tokens, probabilities, [0, 3, 5], decode, 3) == [(0, 3), (0, 1, 5)]
    assert branch_points(tokens, probabilities, [0, 4, 5], decode, 3) == [(0, 1, 5)]


def test_branch_points_on_the_lines_the_instruction_names_come_first():
    from specedit.editing.branches import branch_points
    from specedit.editing.region import named_lines

    source = "def first():\n    return 1\n\n\ndef second():\n    return 2\n"
    assert named_lines("`second()` returns 2; `first` is fine; `nothing` here", source) == {
        1,
        2,
        5,
        6,
    }
    assert named_lines("`second` is wrong", source) == {5, 6}
    assert named_lines("`second` is wrong", "not python (") == set()
    pieces = ["a\n", "b\n", "c\n", "x", "y"]  # three lines, then the others' texts

    def decode(tokens: list[int]) -> str:
        return "".join(pieces[t] for t in tokens)

    tokens, runners_up = [0, 1, 2], [3, 4, 3]
    probabilities = [0.5, 0.9, 0.6]
    assert branch_points(tokens, probabilities, runners_up, decode, 3) == [(3,), (0, 1, 3), (0, 4)]
    ranked = branch_points(tokens, probabilities, runners_up, decode, 3, {2, 3})
    assert ranked == [(0, 1, 3), (0, 4), (3,)]  # lines 2-3 first, however sure


def test_branch_points_in_python_comments_come_after_the_code_s():
    from specedit.editing.branches import branch_points

    pieces = ["x = 1  ", "# one", "\n", "y", "z"]

    def decode(tokens: list[int]) -> str:
        return "".join(pieces[t] for t in tokens)

    tokens, probabilities, runners_up = [0, 1, 2], [0.9, 0.2, 0.99], [3, 4, 3]
    assert branch_points(tokens, probabilities, runners_up, decode, 3) == [(0, 4), (3,), (0, 1, 3)]
    code_first = branch_points(tokens, probabilities, runners_up, decode, 3, language="python")
    assert code_first == [(3,), (0, 1, 3), (0, 4)]
    prose_first = branch_points(
        tokens, probabilities, runners_up, decode, 3, language="python", prose_first=True
    )
    assert prose_first == [(0, 4), (3,), (0, 1, 3)]  # an edit of the comments


def test_an_edit_of_the_comments_branches_in_them_first_and_a_fix_never():
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    pieces = ["x = 1  ", "# eins", "\n", "y", " one"]
    source = "x = 1  # eins\n"
    generation = Generation([0, 1, 2], "eos", Stats(), [0.9, 0.2, 0.99], [3, 4, 3])
    first = EditResult(source, generation, EditPrompt([], "```", source, 0, 0))

    def starts(prompt: str, instruction: str) -> list[tuple[int, ...]]:
        request = EditRequest(source, instruction, prompt=prompt, language="python")
        decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
        return selection.redraw_starts(first, request, decode, 1)

    assert starts("edit", "Translate the comments into English") == [(0, 4)]
    assert starts("edit", "Add a docstring to each function") == [(0, 4)]
    assert starts("edit", "Rename x to y") == [(3,)]
    assert starts("fix", "the comments say one, but x is 2") == [(3,)]


def test_the_named_definitions_are_found_in_the_answer_s_lines_not_the_input_s():
    """A file's leading blank lines are in no answer (prompts.framed), so the lines of the
    function the instruction names are counted without them: the least sure token there
    comes first, however sure it is beside one in another function."""
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    pieces = ["def f():\n", "    return 1\n", "\n", "def g():\n", "    return 2\n", "def h():\n"]
    source = "\n\n" + "".join(pieces[:5])
    generation = Generation([0, 1, 2, 3, 4], "eos", Stats(), [0.1, 0.9, 0.99, 0.5, 0.9], [5] * 5)
    first = EditResult(source, generation, EditPrompt([], "```", source, 0, 0))
    request = EditRequest(source, "`g` returns the wrong number", prompt="fix", language="python")
    decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
    assert selection.redraw_starts(first, request, decode, 1) == [(0, 1, 2, 5)]


def test_branch_points_in_docstrings_or_starting_a_comment_come_after_the_code_s():
    """A docstring runs nothing, and neither does a comment the other token would start; a
    string that is part of the code counts as code."""
    from specedit.editing.branches import branch_points

    pieces = ['def f():\n    """Sum', ' all."""\n', "    return", " 'a'", "\n", " #", " x", " 'b'"]

    def decode(tokens: list[int]) -> str:
        return "".join(pieces[t] for t in tokens)

    tokens = [0, 1, 2, 3, 4]
    probabilities = [0.99, 0.1, 0.3, 0.5, 0.99]
    runners_up = [0, 6, 5, 7, 4]  # in the docstring; a comment after `return`; another string
    ranked = branch_points(tokens, probabilities, runners_up, decode, 3, language="python")
    assert ranked == [(0, 1, 2, 7), (0, 6), (0, 1, 5)]
    assert branch_points(tokens, probabilities, runners_up, decode, 3)[0] == (0, 6)


def test_voting_keeps_the_change_the_candidates_agree_on(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    plus, times = SOURCE.replace("a - b", "a + b"), SOURCE.replace("a - b", "a * b")
    calls = _answering(monkeypatch, [times, plus, plus.replace("a + b", "a  +  b")], tokenizer)
    result, file = _fix(tmp_path, tiny_model_dir, "--samples", "3", "--vote", "-i")
    assert result.exit_code == 0, result.stderr
    assert file.read_text() == plus and len(calls) == 3


def test_by_default_an_unchanged_fix_is_redrawn_once_and_bad_sample_options_are_refused(
    tmp_path, tiny_model_dir, tokenizer, monkeypatch
):
    """The default is two candidates: the unchanged fix gets its branch redraw and no more;
    `--samples 1` is one greedy edit."""
    fixed = SOURCE.replace("a - b", "a + b")
    calls = _answering(monkeypatch, [SOURCE, SOURCE, fixed], tokenizer)
    result, _ = _fix(tmp_path, tiny_model_dir)
    assert result.exit_code == 0 and len(calls) == 2 and calls[1].request.steering.forced
    assert "2 candidates drawn" in result.stderr
    calls = _answering(monkeypatch, [SOURCE, fixed], tokenizer)
    result, _ = _fix(tmp_path, tiny_model_dir, "--samples", "1")
    assert result.exit_code == 0 and len(calls) == 1 and "candidates" not in result.stderr
    for options, message in [
        (("--samples", "0"), "--samples must be at least 1"),
        (("--vote",), "--vote chooses among --samples candidates"),
        (("--samples", "3", "--test", "true"), "--samples chooses without tests"),
    ]:
        result, _ = _fix(tmp_path, tiny_model_dir, *options)
        assert result.exit_code == 2 and message in result.stderr


class CountingEditor:
    """An editor without a model: generation k answers `answers[k]`, its request recorded,
    with the tokens "ab", the `b` unsure with `c` a close second (one branch point) unless
    `sure` (no other token: none); its stats count the generations so far, so the reported
    ones tell which was delivered."""

    default_method = "pld"
    engine = "fake"

    def __init__(self, *answers: str, sure: bool = False) -> None:
        self.answers, self.sure = answers, sure
        self.requests: list = []
        self.startup: dict[str, float] = {}

    def decode(self, tokens: list[int]) -> str:
        return "".join("abc"[t] for t in tokens)

    def edit(self, request, on_start=None, on_step=None):
        from specedit.editing.editor import EditResult
        from specedit.editing.prompts import EditPrompt
        from specedit.engine.events import Generation, Stats

        self.requests.append(request)
        prompt = EditPrompt([], "```", request.text, 0, 0)
        if on_start:
            on_start(prompt, 100)
        stats = Stats(new_tokens=len(self.requests), forward_passes=1)
        other = 1 if self.sure else 2  # the `b` has no other, or a close second `c`
        generation = Generation([0, 1], "eos", stats, [1.0, 0.4], [0, other])
        return EditResult(self.answers[len(self.requests) - 1], generation, prompt)


def _default_fix(tmp_path, monkeypatch, editor: CountingEditor) -> tuple[str, dict, int]:
    """`specedit fix -i` as the command runs it by default, on `editor`: the file written, the
    stats reported, and how often the safety checks ran."""

    from rich.console import Console

    from specedit.cli.deliver import edit_file
    from specedit.cli.output import Delivery
    from specedit.editing import safety
    from specedit.editing.selection import DEFAULT_SAMPLES

    checks = []
    problems = safety.problems
    monkeypatch.setattr(safety, "problems", lambda *asked: checks.append(asked) or problems(*asked))
    file, stats = tmp_path / "add.py", tmp_path / "stats.json"
    file.write_text(SOURCE)
    template = EditRequest("", "add subtracts", prompt="fix", mode=Mode.FIX)
    delivery = Delivery(in_place=True, quiet=True, stats_file=stats)
    samples = selection.Samples(DEFAULT_SAMPLES)
    code = edit_file(editor, str(file), template, delivery, Console(stderr=True), samples=samples)
    assert code == 0
    return file.read_text(), json.loads(stats.read_text()), len(checks)


def test_a_default_fix_makes_two_generations_at_most_and_checks_each_once(tmp_path, monkeypatch):
    """By default a fix makes two generations at most: the first answer, asked for its
    choices, then, where it is unchanged, one from its branch point (`c` for its `b`) that keeps
    its first change only (`rejoin`), or sampled where it has none. A changed first answer is the
    only generation. The safety
    checks run once per changed candidate: the delivery reads the delivered one's verdict."""
    plus, times = SOURCE.replace("a - b", "a + b"), SOURCE.replace("a - b", "a * b")
    unchanged = CountingEditor(SOURCE, plus)
    written, stats, checks = _default_fix(tmp_path, monkeypatch, unchanged)
    assert [r.steering.forced for r in unchanged.requests] == [(), (0, 2)]
    assert [r.steering.choices for r in unchanged.requests] == [True, False]
    assert [r.steering.rejoin for r in unchanged.requests] == [None, SOURCE]
    assert [r.sampling.temperature for r in unchanged.requests] == [0.0, 0.0]
    assert written == plus and stats["new_tokens"] == 2 and checks == 1

    changed = CountingEditor(times, plus)
    written, stats, checks = _default_fix(tmp_path, monkeypatch, changed)
    assert len(changed.requests) == 1 and changed.requests[0].steering.choices
    assert written == times and stats["new_tokens"] == 1 and checks == 1

    sure = CountingEditor(SOURCE, plus, sure=True)  # unchanged, and no branch point: sampled
    written, stats, checks = _default_fix(tmp_path, monkeypatch, sure)
    assert [r.steering.forced for r in sure.requests] == [(), ()]
    assert sure.requests[1].sampling.temperature > 0 and sure.requests[1].feedback
    assert written == plus and stats["new_tokens"] == 2


def _bench_add(tiny_model_dir, tmp_path, source=SOURCE, edit: str | None = None, **setup):
    """The bench's row for one task: fix `add` (in `source`; or `edit` it so), checked by its
    tests, on the tiny model."""

    from specedit.bench.runner import run_bench
    from specedit.models.load import load

    task = {
        "id": "add",
        "kind": "edit" if edit else "fix",
        "instruction": edit or "add subtracts",
        "input": source,
        "language": "python",
        "tests": "assert add(2, 3) == 5",
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    lm = load(str(tiny_model_dir), dtype="fp32")
    (row,) = run_bench(lm, ["pld"], tasks_file=tasks, **setup)
    return row


def test_the_bench_runs_a_samples_setup_and_scores_the_chosen_candidate(
    tiny_model_dir, tokenizer, tmp_path, monkeypatch
):
    """`specedit bench --samples 3`: candidates drawn while unacceptable, the chosen one is
    checked with the task's tests, and the row counts every candidate."""
    fixed = SOURCE.replace("a - b", "a + b")
    calls = _answering(monkeypatch, [SOURCE, fixed], tokenizer)
    row = _bench_add(tiny_model_dir, tmp_path, selections=["3"])
    assert row.method == "pld~s3" and row.passed and row.attempts == 2 and len(calls) == 2
    assert row.unchanged is False and calls[1].request.steering.forced  # redrawn where unsure


def test_the_bench_row_names_the_function_its_delivered_candidate_wrote_afresh(
    tiny_model_dir, tokenizer, tmp_path, monkeypatch
):
    wrong = [DOCUMENTED.replace("a - b", f"a {op} b") for op in "*/"]
    written = 'def add(a, b):\n    """Add."""\n    return b + a\n'
    calls = _answering(monkeypatch, [*wrong, written], tokenizer)
    row = _bench_add(tiny_model_dir, tmp_path, DOCUMENTED, selections=["examples4"])
    assert row.passed and row.afresh == "add" and calls[2].request.prompt == "afresh"
    _answering(monkeypatch, [SOURCE, DOCUMENTED.replace("a - b", "a + b")], tokenizer)
    assert _bench_add(tiny_model_dir, tmp_path, DOCUMENTED, selections=["3"]).afresh is None


def test_the_bench_row_names_what_the_delivered_edit_never_writes_of_what_was_asked(
    tiny_model_dir, tokenizer, tmp_path, monkeypatch
):
    _answering(monkeypatch, [PART], tokenizer)
    edit = "Fix add and write `mul(a, b)`."
    row = _bench_add(tiny_model_dir, tmp_path, edit=edit, selections=["2"])
    assert row.passed and row.absent == ["mul"]
    _answering(monkeypatch, [WITH_MUL], tokenizer)
    assert _bench_add(tiny_model_dir, tmp_path, edit=edit, selections=["2"]).absent == []


def test_the_bench_checks_the_delivered_answer_without_each_pass_that_changed_it(
    tiny_model_dir, tokenizer, tmp_path, monkeypatch
):
    """A pass's ablation in the same run: the tests run on the answer as it was before each
    post-processing pass that changed it (a fix's redraw: its first change only)."""
    fixed, wrong = SOURCE.replace("a - b", "a + b"), SOURCE.replace("a - b", "a * b")
    swapped = SOURCE.replace("a - b", "b + a")  # right too
    _answering(monkeypatch, [SOURCE, fixed], tokenizer, passes={"rename": wrong})
    row = _bench_add(tiny_model_dir, tmp_path, selections=["3"])
    assert row.passed and row.without_pass == {"rename": False}
    _answering(monkeypatch, [SOURCE, fixed], tokenizer, passes={"resume": swapped})
    assert _bench_add(tiny_model_dir, tmp_path, selections=["3"]).without_pass == {"resume": True}


def test_the_bench_s_attempts_redraw_from_branch_points_and_record_each_try(
    tiny_model_dir, tokenizer, tmp_path, monkeypatch
):
    """`specedit bench --attempts 3`: the task's tests judge each try; the unchanged first
    answer is redrawn where it was unsure, and the row says how each try ended."""
    wrong = SOURCE.replace("a - b", "a * b")
    fixed = SOURCE.replace("a - b", "a + b")
    calls = _answering(monkeypatch, [SOURCE, wrong, fixed], tokenizer)
    row = _bench_add(tiny_model_dir, tmp_path, attempts=3)
    assert row.passed and row.attempts == 3
    assert row.tries == ["unchanged", "failed", "passed"]
    assert calls[1].request.steering.forced and not calls[1].request.feedback  # one branch point
    assert "assert" in calls[2].request.feedback  # then the failure is shown


def test_a_forced_start_begins_the_answer_and_the_model_goes_on_from_it(tiny_model_dir):
    """A redraw's forced tokens are the answer's first, and what follows is the model's own
    greedy continuation of the prompt and them; tokens outside the vocabulary, or as many as
    the token limit, are refused."""

    from specedit.drafting.registry import make_drafter
    from specedit.editing.editor import EditError, EditRequest, generate_edit, prepare
    from specedit.engine.session import generate
    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")
    request = EditRequest(SOURCE, "add subtracts", prompt="fix", method="pld", max_new_tokens=12)
    request = request.steered(choices=True)
    prepared = prepare(lm, request)
    plain = generate_edit(lm, prepared)
    forced = (plain.tokens[0], plain.runners_up[1])
    redrawn = generate_edit(lm, prepare(lm, request.steered(forced=forced)))
    assert tuple(redrawn.tokens[:2]) == forced and redrawn.probabilities[:2] == [1.0, 1.0]
    own = generate(
        lm.model,
        prepared.prompt.ids + list(forced),
        make_drafter("ar", lm.model),
        max_new_tokens=10,
        eos_token_ids=lm.eos_token_ids,
    )
    assert redrawn.tokens[2:] == own.tokens[: len(redrawn.tokens) - 2]
    assert len(redrawn.tokens) <= 12
    vocabulary = lm.model.config.vocab_size
    for forced, message in [((vocabulary,), "vocabulary"), ((1,) * 12, "token limit")]:
        with pytest.raises(EditError, match=message):
            prepare(lm, request.steered(forced=forced))


def test_the_examples_run_while_the_answer_s_code_is_read(monkeypatch):
    """After each answer the examples' process and pylint's read run side by side (each
    waits here for the other to start); an answer whose code cannot run is refused for that,
    whatever its examples said, and one that reads clean is judged by them."""
    import threading

    from specedit.editing.checks import CheckResult
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    original = "def f(x):\n    return x + 0\n"
    undefined, fixed = original.replace("x + 0", "y + 1"), original.replace("x + 0", "x + 1")
    reading, running = threading.Event(), threading.Event()
    read_code = verdicts.read_code

    def read_meanwhile(verdict, text, language):
        reading.set()
        assert running.wait(10), "the examples did not run while the code was read"
        return read_code(verdict, text, language)

    def examples(text: str) -> CheckResult:
        running.set()
        assert reading.wait(10), "the code was not read while the examples ran"
        reading.clear()
        return CheckResult(True, 0, "", 0.0)

    monkeypatch.setattr(selection, "read_code", read_meanwhile)
    given = iter([undefined, fixed])

    def run(request: EditRequest) -> EditResult:
        generation = Generation([0, 1], "eos", Stats(), [0.9, 0.4], [0, 2])
        return EditResult(next(given), generation, EditPrompt([], "```", original, 0, 0))

    request = EditRequest(original, "f adds one", prompt="fix", language="python")
    samples = selection.Samples(2, examples=Examples.CONFINED)
    decode = lambda tokens: "".join("abc"[t] for t in tokens)  # noqa: E731
    drawn = selection.draw_edits(run, request, str, samples, decode, examples)
    first, second = (candidate.verdict for candidate in drawn.candidates)
    assert "nothing defines" in first.problem and first.examples is None
    assert second.acceptable and second.examples.passed and drawn.chosen.text == fixed


@pytest.mark.parametrize(
    ("text_tokens", "without", "drawn"),
    [(selection.SHORT_TEXT_TOKENS, (), EXAMPLES_SAMPLES)]
    + [(selection.SHORT_TEXT_TOKENS + 1, (), 2)]
    + [(selection.SHORT_TEXT_TOKENS + 1, (selection.SHORT_ONLY,), EXAMPLES_SAMPLES)],
)
def test_the_extra_candidates_the_examples_ask_for_are_drawn_for_a_short_text_only(
    text_tokens, without, drawn
):
    """Every answer fails the examples: the default draws eight candidates where the text an
    answer writes again is short, and its own two where it is longer (one more would cost a
    rewrite of it), unless that step is left out."""
    from specedit.editing.checks import CheckResult
    from specedit.editing.editor import EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    original = "def f(x):\n    return x + 0\n"
    asked: list[EditRequest] = []

    def run(request: EditRequest) -> EditResult:
        asked.append(request)
        generation = Generation([0, 1], "eos", Stats(), [0.9, 0.4], [0, 2])
        prompt = EditPrompt([], "```", original, 3, 3 + text_tokens)
        return EditResult(original.replace("0", str(len(asked))), generation, prompt)

    failing = lambda text: CheckResult(False, 1, "Failed example", 0.0)  # noqa: E731
    request = EditRequest(original, "f adds one", prompt="edit", language="python")
    samples = replace(DEFAULT, without=frozenset(without))
    decode = lambda tokens: "".join("abc"[t] for t in tokens)  # noqa: E731
    chosen = selection.draw_edits(run, request, str, samples, decode, failing)
    assert len(asked) == len(chosen.candidates) == drawn
    assert chosen.chosen.text == original.replace("0", "1")  # what a draw without them gives
