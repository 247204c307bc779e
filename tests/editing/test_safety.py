"""Safety checks before a write: the edit still parses, and no large part of the file vanished."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import DATA

from specedit.editing import safety

MODULE = '''"""Shapes."""

import math


def area(radius):
    return math.pi * radius**2


def perimeter(radius):
    return 2 * math.pi * radius


def describe(radius):
    return f"r={radius} a={area(radius):.2f} p={perimeter(radius):.2f}"
'''


def test_a_small_correct_edit_has_no_problems():
    edited = MODULE.replace("radius**2", "radius * radius")
    assert safety.problems(MODULE, edited, "avoid the power operator", "python") == []


def test_broken_python_is_named_with_the_parsers_message_and_line():
    edited = MODULE.replace("return 2 * math.pi * radius", "return 2 * (math.pi * radius")
    [problem] = safety.problems(MODULE, edited, "fix the perimeter", "python")
    assert problem.startswith("the edit breaks its Python syntax: ")
    assert "'(' was never closed (line 11)" in problem


def test_input_that_is_already_broken_is_not_blamed_on_the_edit():
    broken = MODULE.replace("def area(radius):", "def area(radius:")
    edited = broken.replace("radius**2", "radius * radius")
    assert safety.problems(broken, edited, "fix it", "python") == []


def test_unknown_languages_are_not_parsed():
    text = "def f(:\n    pass\n"  # not valid Python, but in a .txt file nobody says it is
    assert safety.problems("hello\n", text, "fix", "text") == []
    assert safety.problems("hello\n", text, "fix", "") == []


@pytest.mark.parametrize(
    "language,good,bad,message",
    [
        ("json", '{"a": 1, "b": [1, 2]}\n', '{"a": 1, "b": [1, 2],}\n', "line 1, column 22"),
        ("toml", 'a = 1\n[b]\nc = "x"\n', 'a = 1\n[b]\nc = "x\n', "line 3"),
        ("yaml", "a: 1\nb:\n  - x\n  - y\n", "a: 1\nb:\n  - x\n - y\n", "line 4"),
        ("xml", "<a><b>1</b></a>\n", "<a><b>1</a></b>\n", "mismatched tag: line 1"),
    ],
)
def test_broken_data_files_are_named(language, good, bad, message):
    assert safety.problems(good, good.replace("1", "2"), "change", language) == []
    [problem] = safety.problems(good, bad, "change", language)
    assert problem.startswith(f"the edit breaks its {language.upper()} syntax: ")
    assert message in problem


DEEP = 100_000  # levels of nesting: past every recursive parser's stack


@pytest.mark.parametrize(
    "language,name,good,deep",
    [
        ("python", "Python", "x = 1\n", "x = " + "-" * DEEP + "1\n"),  # the parser's MemoryError
        ("python", "Python", "x = a\n", "x = a" + "[0]" * DEEP + "\n"),  # ast's RecursionError
        ("json", "JSON", "[1]\n", "[" * DEEP + "]" * DEEP + "\n"),
        ("toml", "TOML", "a = [1]\n", "a = " + "[" * DEEP + "]" * DEEP + "\n"),
    ],
)
def test_text_nested_too_deeply_to_parse_is_a_verdict_not_a_traceback(language, name, good, deep):
    assert safety.syntax_error(deep, language) == safety.TOO_DEEP
    assert safety.problems(deep, good, "flatten it", language) == []  # unparsable input: no check
    [problem] = safety.problems(good, deep, "nest it", language)
    assert problem == f"the edit breaks its {name} syntax: nested too deeply to parse"


@pytest.mark.parametrize(
    "loader,levels,verdict",
    [
        # PyYAML's own parser recurses once per level, past Python's stack: a RecursionError.
        # (Its scanner slows with every level open, so no deeper than that.)
        ("SafeLoader", 600, safety.TOO_DEEP),
        (
            "CSafeLoader",
            1_200,
            "exceeded maximum nesting depth (line 1, column ",
        ),  # libyaml's 1,000
    ],
)
def test_yaml_nested_too_deeply_is_a_verdict_with_either_loader(
    monkeypatch, loader, levels, verdict
):
    if not hasattr(yaml, loader):
        pytest.skip("PyYAML was built without libyaml")
    if loader == "SafeLoader":  # where PyYAML has libyaml, the checks use it
        monkeypatch.setattr(safety, "_YAML_LOADER", yaml.SafeLoader)
    deep = "a: " + "[" * levels + "]" * levels + "\n"
    assert safety.syntax_error(deep, "yaml").startswith(verdict)
    assert safety.problems(deep, "a: [1]\n", "flatten it", "yaml") == []
    [problem] = safety.problems("a: [1]\n", deep, "nest it", "yaml")
    assert problem.startswith(f"the edit breaks its YAML syntax: {verdict}")


def test_deep_xml_and_deep_stdin_are_a_verdict_too():
    assert safety.syntax_error("<a>" * DEEP + "</a>" * DEEP, "xml") is None  # expat: no recursion
    deep = "[" * DEEP + "]" * DEEP + "\n"
    assert safety.sniff(deep) == ""  # cannot be parsed, so not known to be JSON
    assert safety.problems(deep, "[]\n", "flatten it", "") == []


def test_stdin_is_sniffed_for_json_only():
    assert safety.problems('{"a": 1}\n', '{"a": 1,\n', "add a key", "")  # JSON in, broken out
    assert safety.problems("a: 1\n", "a: [1\n", "edit", "") == []  # YAML is not guessed


def test_a_large_deletion_is_refused():
    edited = MODULE[: MODULE.index("def perimeter")]  # two of four definitions gone
    [problem] = safety.problems(MODULE, edited, "fix the area formula", "python")
    assert problem == (
        "the edit drops 4 of 8 non-blank lines (50%) and the instruction asks to remove nothing"
    )


@pytest.mark.parametrize(
    "instruction",
    ["Remove the describe function", "delete unused code", "please SIMPLIFY this", "clean up"],
)
def test_a_deletion_the_instruction_asks_for_is_allowed(instruction):
    edited = MODULE[: MODULE.index("def perimeter")]
    assert safety.problems(MODULE, edited, instruction, "python") == []


LOOPS = """def pick(names, pat):
    \"\"\"The names that match pat.\"\"\"
    result = []
    for name in names:
        if pat in name:
            result.append(name)
    return result


def count(names, pat):
    \"\"\"How many names match pat.\"\"\"
    total = 0
    for name in names:
        total += pat in name
    return total
"""
PICK_AS_COMPREHENSION = LOOPS.replace(
    """    result = []
    for name in names:
        if pat in name:
            result.append(name)
    return result
""",
    "    return [name for name in names if pat in name]\n",
)


def test_a_definition_the_instruction_reshapes_may_come_back_shorter():
    """Four of thirteen lines go, all of them inside `pick`, which the instruction asks to
    convert: the rest of the file comes back whole, so nothing is refused; asked anything
    else, or where the rest loses lines too, it is."""
    convert = "Convert the loop in `pick` to a list comprehension."
    assert safety.dropped_lines(LOOPS, PICK_AS_COMPREHENSION) == 4
    assert safety.reshaped_definitions(LOOPS, PICK_AS_COMPREHENSION, convert) == {
        "pick": ((1, 7), (1, 3))
    }
    assert safety.problems(LOOPS, PICK_AS_COMPREHENSION, convert, "python") == []
    [problem] = safety.problems(LOOPS, PICK_AS_COMPREHENSION, "Make `pick` faster.", "python")
    assert problem.startswith("the edit drops 4 of 13 non-blank lines (31%) and")
    # the loop in `count` lost too: three lines dropped outside `pick`
    both = PICK_AS_COMPREHENSION.replace(
        "    for name in names:\n        total += pat in name\n", ""
    ).replace("    total = 0\n", "")
    [problem] = safety.problems(LOOPS, both, convert, "python")
    assert problem == (
        "the edit drops 3 of 13 non-blank lines (23%) outside `pick` "
        "and the instruction asks to remove nothing"
    )


def test_a_reshaped_definition_counts_only_where_both_texts_define_it():
    """A name that is a word in backticks, or a definition the answer no longer has, is no
    reshaped definition: its lines count as any others."""
    convert = "Convert the loop in `pick` to a list comprehension."
    gone = LOOPS[LOOPS.index("def count") :]
    assert safety.reshaped_definitions(LOOPS, gone, convert) == {}
    assert safety.problems(LOOPS, gone, convert, "python")
    assert safety.reshaped_definitions(LOOPS, LOOPS, "Convert `names` to a set.") == {}
    assert safety.reshaped_definitions(LOOPS, LOOPS, "Convert `pick`'s loop: a list.") != {}
    # a class holds most of a file: reshaping it is no leave to lose its lines
    boxed = "class Box:\n" + "".join(f"    {line}\n" for line in LOOPS.splitlines())
    assert safety.reshaped_definitions(boxed, boxed, "Convert `Box` to a dataclass.") == {}
    assert safety.reshaped_definitions(boxed, boxed, "Convert `Box.pick` to a loop.") != {}
    assert safety.reshaped_definitions("not python (", "x", convert) == {}


def test_removal_words_are_whole_words():
    assert not safety.asks_for_removal("fix the dropdown and the cutoff")
    assert not safety.asks_for_removal("make the removal faster")  # a noun, not a verb
    assert safety.asks_for_removal("the lines were trimmed: put them back") is True


def test_each_gap_says_how_many_lines_it_leaves_out_and_the_line_after_it():
    """Blank lines are not counted, a replacement by fewer lines leaves out the difference, and
    the line after a gap is the edited text's (from 0), where a redraw would go on."""
    long = "".join(f"line {i}\n" for i in range(20))
    edited = long.replace("line 3\nline 4\nline 5\n", "").replace("line 9\nline 10\n", "nine\n")
    assert safety.gaps(long, edited) == [(3, 3), (1, 7)]
    assert safety.dropped_lines(long, edited) == 4
    assert safety.gaps("a\n\n\nb\n", "a\nb\n") == []
    # three non-blank lines in one place are left out; two here and one there are not
    assert safety.left_out(long, edited)
    assert not safety.left_out(long, long.replace("line 3\nline 4\n", "").replace("line 9\n", ""))


def test_small_deletions_and_small_files_are_fine():
    two_gone = MODULE.replace("    return 2 * math.pi * radius\n", "").replace(
        '"""Shapes."""\n', ""
    )
    assert safety.dropped_lines(MODULE, two_gone) == 2  # 25%, but under the minimum of 3 lines
    assert safety.problems(MODULE, two_gone, "fix it", "") == []
    long = "".join(f"line {i}\n" for i in range(20))
    three_gone = long.replace("line 3\n", "").replace("line 9\n", "").replace("line 15\n", "")
    assert safety.problems(long, three_gone, "fix it", "") == []  # 3 lines, but only 15%
    five_gone = three_gone.replace("line 4\n", "").replace("line 10\n", "")
    assert safety.problems(long, five_gone, "fix it", "")  # 25%
    short = "a = 1\nb = 2\nc = 3\n"
    assert safety.problems(short, "a = 1\n", "fix it", "python") == []  # 2 lines < 3
    assert safety.problems(short, "", "fix it", "text")  # 3 of 3 lines gone


# Real answers of the bundled model, recorded on 2026-11-23 with qwen2.5-coder-0.5b (the default
# Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF converted; fp32 on CPU; method adapld, greedy, strict
# verification), i.e. what `specedit edit FILE.in "<instruction>" -q --force` prints; they were
# made through `edit.execute(lm, edit.prepare(lm, EditRequest(text, instruction, prompt="edit",
# language=...)))`, which is the same call. Of 11 short edits (inputs of 11 to 50 lines: a fix,
# docstrings, type hints, a JSON field, a YAML service, TOML sections, a new class), 6 returned
# the input unchanged, 3 made a harmless (if incomplete or wrong) change, one broke Python syntax
# and one silently dropped two lines (both kept here, with two of the harmless ones); none
# dropped more than two lines, so the large-deletion refusal is tested on hand-made cases only
# (above, and in cli/test_test_loop.py).
RECORDED = DATA / "recorded"
CASES = json.loads((RECORDED / "cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["output"])
def test_recorded_model_outputs(case):
    original = (RECORDED / case["input"]).read_text()
    edited = (RECORDED / case["output"]).read_text()
    assert edited != original
    found = safety.problems(original, edited, case["instruction"], case["language"])
    assert len(found) == len(case["problems"]), found
    for problem, expected in zip(found, case["problems"]):
        assert problem.startswith(expected)
