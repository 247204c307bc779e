"""A fix's function written afresh from its docstring (editing/afresh.py): which function, what
the model is shown, and how its answer's body takes the old one's place."""

from __future__ import annotations

import ast
from dataclasses import replace
from types import SimpleNamespace

import pytest

from specedit.editing import afresh
from specedit.editing.editor import EditRequest, Mode
from specedit.editing.verdicts import UNCHANGED_FIX

FILE = '''import math


def area(r):
    """The area of a circle of radius r.

    >>> area(1.0)
    3.14159...
    """
    # the old body
    return 2 * math.pi * r


def untold(x):
    return x
'''
HEAD = FILE.split("    # the old body")[0]


@pytest.mark.parametrize(
    ("instruction", "found"),
    [
        ("Fix bugs in area.", "area"),
        ("`area(1.0)` gives 6.28, not 3.14", "area"),
        ("untold(2) is wrong", None),  # no docstring to write it from
        ("the result is wrong", None),  # names no function
        ("area and untold disagree", "area"),  # only one of them can be written afresh
    ],
)
def test_the_function_written_afresh_is_the_documented_one_the_instruction_names(
    instruction, found
):
    written = afresh.function_to_write(FILE, instruction)
    assert (written.name if written else None) == found
    if written:
        assert written.head == HEAD  # up to the end of its docstring: the body left out


def test_nothing_is_written_afresh_where_the_text_does_not_parse_or_has_no_body():
    assert afresh.function_to_write("def area(r:\n", "Fix area") is None
    assert afresh.function_to_write('def area(r):\n    """Doc."""\n', "Fix area") is None
    assert afresh.function_to_write('def area(r):\n    """Doc."""; return r\n', "Fix area") is None


def test_its_request_asks_for_the_function_with_the_fix_as_the_users_report():
    fix = EditRequest(FILE, "Fix bugs in area.", prompt="fix", language="python", mode=Mode.FIX)
    fix = fix.steered(forced=(1, 2), choices=True)
    asked = afresh.function_to_write(FILE, fix.instruction).request(fix)
    assert (asked.text, asked.prompt, asked.mode, asked.language) == (
        HEAD,
        "afresh",
        Mode.EDIT,
        "python",
    )
    assert "`area`" in asked.instruction and "Fix bugs in area." in asked.instruction
    assert asked.steering.forced == () and not asked.steering.choices
    assert asked.max_new_tokens > afresh.BODY_TOKENS  # room for a body the head lacks


WRITTEN = '''import math
import cmath

def area(r):
  """Other words."""
  # pi r squared
  return math.pi * r ** 2
'''
GRAFTED = FILE.replace(
    "    # the old body\n    return 2 * math.pi * r\n",
    "    # pi r squared\n    return math.pi * r ** 2\n",
).replace("import math\n", "import math\nimport cmath\n")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (WRITTEN, GRAFTED),  # the docstring kept, the body re-indented, a new import after ours
        ("def area(r):\n    return r\n", None),  # no docstring: where its body starts is unsure
        ("def perimeter(r):\n    return r\n", None),  # not the function asked for
        ("def area(r:\n", None),  # does not parse
    ],
)
def test_the_answers_body_takes_the_old_ones_place(answer, expected):
    assert afresh.graft(FILE, "area", answer) == expected


def test_an_import_goes_after_a_module_docstring_where_the_file_has_no_import():
    text = '"""Circles."""\n\ndef area(r):\n    """Area."""\n    return r\n'
    answer = 'import math\n\ndef area(r):\n    """Area."""\n    return math.pi * r * r\n'
    grafted = afresh.graft(text, "area", answer)
    assert grafted.startswith('"""Circles."""\nimport math\n')
    assert ast.get_docstring(ast.parse(grafted)) == "Circles."


def test_no_import_stands_in_for_what_the_file_defines_and_a_region_gets_none():
    """A copy of a standard module whose answer imports the real module's class (the bug
    then lies unfixed in the file's own) gets no such import; a region's imports are the
    file's, out of its reach, so none is added to it."""
    text = (
        "class Wrapper:\n    pass\n\n\n"
        'def wrap(t):\n    """Wrap t."""\n    return Wrapper().wrap(t)\n'
    )
    answer = (
        "from __future__ import annotations\nimport math\n"
        "from textwrap import TextWrapper as Wrapper\n\n"
        'def wrap(t):\n    """Wrap t."""\n    return Wrapper().wrap(t[: math.inf])\n'
    )
    grafted = afresh.graft(text, "wrap", answer)
    assert grafted.startswith("import math\nclass Wrapper:")  # no future import in the middle
    assert "textwrap" not in grafted
    assert afresh.graft(text, "wrap", answer, imports=False) == text.replace(
        "wrap(t)\n", "wrap(t[: math.inf])\n"
    )


def test_a_fix_narrowed_to_a_function_s_body_writes_it_afresh_with_its_head():
    """A fix narrowed to a function's body (its head shown above it, `Surroundings.head`)
    finds the function in its head and body together, and the body written afresh goes in
    after the same head: the region's answer opens with it, so it takes the head's place
    (the head as it was)."""
    from specedit.editing.redraws import AfreshRedraw
    from specedit.editing.region import Region

    first = FILE.split("\n").index("    # the old body") + 1
    body, around = Region(first, first + 1, context=2, head=4).cut(FILE)
    fix = EditRequest(body, "Fix bugs in area.", prompt="fix", language="python", mode=Mode.FIX)
    fix = replace(fix, surroundings=around)
    assert afresh.function_to_write(fix.text, fix.instruction) is None  # a body alone
    drawing = SimpleNamespace(examples=lambda text: None, unchanged=UNCHANGED_FIX, request=fix)
    redraw = AfreshRedraw().redraw(drawing, 2, None)
    assert redraw.afresh.head == HEAD.removeprefix("import math\n\n\n")
    answer = redraw.afresh.put_in(fix.headed_text, WRITTEN, imports=False)
    assert around.around(answer) == GRAFTED.replace("import cmath\n", "")
