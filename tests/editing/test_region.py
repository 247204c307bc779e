"""--lines A-B: the model is asked for the region only, sees the rest of the file, and every byte
outside the region is kept; checks, tests and writes see the whole file."""

from __future__ import annotations

import re
import sys

import pytest
from helpers import ScriptedEditor
from rich.console import Console
from typer.testing import CliRunner

from specedit.cli import app
from specedit.cli.deliver import CheckCommand, edit_file
from specedit.cli.exits import Exit
from specedit.cli.output import Delivery
from specedit.editing import prompts
from specedit.editing.editor import EditRequest
from specedit.editing.region import Region

# A form feed and a CRLF line outside the region: bytes that a careless split would change.
FILE = (
    "import math\r\n"
    "\x0c\n"
    "def double(x):\n"
    "    return x * 3\n"
    "\n"
    "\n"
    "def halve(x):\n"
    "    return x / 2"  # no newline at the end
)


def test_a_region_cuts_and_joins_back_to_the_same_bytes():
    inside, around = Region.parse("3-4").cut(FILE)
    assert inside == "def double(x):\n    return x * 3\n"
    assert around.before == "import math\r\n\x0c\n" and around.after.startswith("\n\ndef halve")
    assert around.around(inside) == FILE
    last, around = Region.parse("8").cut(FILE)
    assert last == "    return x / 2" and around.around(last) == FILE
    assert Region.parse(" 2 - 5 ") == Region(2, 5)
    with pytest.raises(ValueError, match="the file has 8 lines"):
        Region(7, 9).cut(FILE)
    for bad in ("", "a-b", "0-3", "5-2", "3-"):
        with pytest.raises(ValueError, match="--lines"):
            Region.parse(bad)


def test_the_prompt_asks_for_the_region_and_shows_the_rest_of_the_file(tokenizer):
    inside, around = Region(3, 4).cut(FILE)
    template = prompts.load_template("fix")
    prompt = prompts.build(tokenizer, template, inside, "double it", "python", surroundings=around)
    rendered = tokenizer.decode(prompt.ids)
    assert prompt.text == inside  # what the answer replaces, and what drafts copy from
    assert tokenizer.decode(prompt.ids[prompt.input_start : prompt.input_end]) == inside
    # the region, the rest of the file, then the instruction: what differs comes last
    context = rendered[rendered.index("The code block above is lines 3-4") :]
    context, instruction = context.split("double it")
    assert "import math" in context and "def halve(x):\n    return x / 2\n```" in context
    assert "lines 3-4: the code block above" in context
    assert rendered.count("return x * 3") == 1  # the region appears once: where it is edited
    assert "Your code block replaces lines 3-4 alone." in instruction
    plain = prompts.build(tokenizer, template, inside, "double it", "python")
    assert "code block above" not in tokenizer.decode(plain.ids)


def test_a_second_instruction_on_a_region_shares_its_prompt_up_to_the_instruction(tokenizer):
    """The rest of the file follows the region and the instruction comes after both, so that a
    warm server or a kept head prefills only the new instruction and what follows it."""
    inside, around = Region(3, 4, context=3).cut(FILE)
    template = prompts.load_template("fix")
    first, second = (
        prompts.build(tokenizer, template, inside, words, "python", surroundings=around).ids
        for words in ("double it", "halve it")
    )
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    kept = tokenizer.decode(first[:shared])
    assert "import math" in kept and "return x * 3" in kept and "def halve" in kept
    assert kept.rstrip().endswith("Fix this file:")


def test_an_answer_that_runs_past_the_region_ends_where_the_rest_begins(tokenizer):
    """A model shown the whole file may go on copying it: the answer is cut where the lines
    after the region begin (their leading blank lines included), and generation stops there."""
    inside, around = Region(3, 4).cut(FILE)
    answer = "def double(x):\n    return x * 2\n\n\ndef halve(x):\n    return x / 2\n"
    cut = around.overrun(answer)
    assert around.around(answer[:cut]) == FILE.replace("x * 3", "x * 2")
    assert around.overrun("def double(x):\n    return x * 2\n") is None
    prompt = prompts.build(
        tokenizer, prompts.load_template("fix"), inside, "x", "python", surroundings=around
    )
    stop = prompts.FenceStop(tokenizer, prompt, around)
    ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    fired = [i for i, token in enumerate(ids) if stop(token)]
    assert fired and tokenizer.decode(ids[: fired[0] + 1]).endswith("return x / 2\n")
    assert prompts.extract(tokenizer, ids, prompt, around) == "def double(x):\n    return x * 2\n"
    assert prompts.extract(tokenizer, ids, prompt) is None  # without the region: cut off


def _doubling() -> ScriptedEditor:
    """Doubles instead of tripling."""
    return ScriptedEditor(lambda text: text.replace("x * 3", "x * 2"))


def _edit(tmp_path, region, test=None, text=FILE):
    path = tmp_path / "calc.py"
    path.write_bytes(text.encode())
    editor = _doubling()
    template = EditRequest("", "double() triples", prompt="fix")
    code = edit_file(
        editor,
        str(path),
        template,
        Delivery(in_place=True, quiet=True),
        Console(stderr=True),
        test,
        None,
        region,
    )
    return code, path.read_bytes().decode(), editor.requests


def test_a_region_edit_writes_the_whole_file_with_only_the_region_changed(tmp_path):
    code, written, [request] = _edit(tmp_path, Region(3, 4))
    assert code == Exit.OK
    assert written == FILE.replace("x * 3", "x * 2")  # every other byte as it was
    assert request.text == "def double(x):\n    return x * 3\n"
    assert request.surroundings.first == 3 and request.surroundings.last == 4


def test_the_test_command_sees_the_whole_edited_file(tmp_path):
    check = (
        f'{sys.executable} -c "import sys; t = open(sys.argv[1]).read(); '
        "assert 'x * 2' in t and 'def halve' in t and 'import math' in t\" {file}"
    )
    code, written, requests = _edit(tmp_path, Region(3, 4), CheckCommand(check, attempts=1))
    assert code == Exit.OK and len(requests) == 1 and "x * 2" in written


def test_a_region_past_the_end_is_an_input_error_and_nothing_is_written(tmp_path, capsys):
    code, written, requests = _edit(tmp_path, Region(8, 12))
    assert code == Exit.INPUT and written == FILE and requests == []
    assert "calc.py: --lines 8-12: the file has 8 lines" in capsys.readouterr().err


def _breaking() -> ScriptedEditor:
    return ScriptedEditor(lambda text: "def double(x:\n")


def test_the_safety_check_reads_the_whole_file(tmp_path):
    """An answer that breaks the syntax inside the region is refused like any other edit."""
    path = tmp_path / "calc.py"
    path.write_bytes(FILE.encode())
    code = edit_file(
        _breaking(),
        str(path),
        EditRequest("", "fix", prompt="fix"),
        Delivery(in_place=True, quiet=True),
        Console(stderr=True),
        None,
        None,
        Region(3, 4),
    )
    assert code == Exit.UNSAFE and path.read_bytes() == FILE.encode()


def test_the_cli_checks_lines_before_loading_a_model(tmp_path):
    path = tmp_path / "calc.py"
    path.write_text(FILE)
    runner = CliRunner()
    result = runner.invoke(app, ["fix", str(path), "double it", "--lines", "4-2"])
    assert result.exit_code == 2 and "A must not exceed B" in result.stderr
    result = runner.invoke(
        app, ["rewrite", str(path), str(path), "-m", "x", "--lines", "1-2", "--diff"]
    )
    assert result.exit_code == 2 and "--lines edits one file" in result.stderr
    assert re.search(r"--lines\s", runner.invoke(app, ["fix", "--help"]).stdout)


def test_context_shows_only_that_many_lines_on_each_side(tokenizer):
    inside, around = Region(3, 4, context=1).cut(FILE)
    assert around.shown() == ("\x0c\n", "\n") and around.shown_lines() == (2, 5)
    assert around.around(inside) == FILE  # what is kept is still the whole file
    assert Region(3, 4, context=0).cut(FILE)[1].shown() == ("", "")
    wide = Region(3, 4, context=50).cut(FILE)[1]
    assert wide.shown() == (wide.before, wide.after) and wide.shown_lines() == (1, 8)
    assert Region(3, 4).cut(FILE)[1].shown_lines() is None

    _, around = Region(3, 4, context=3).cut(FILE)
    prompt = prompts.build(
        tokenizer, prompts.load_template("fix"), inside, "double it", "python", surroundings=around
    )
    context = tokenizer.decode(prompt.ids)
    context = context[context.index("The code block above is lines 3-4") :]
    assert "here are lines 1-7 of it, with those lines left out" in context
    assert "import math" in context and "def halve" in context.split("lines 3-4: the code")[1]
    assert "return x / 2" not in context  # line 8 lies outside the window


def test_a_region_edit_with_context_still_writes_the_whole_file(tmp_path):
    code, written, [request] = _edit(tmp_path, Region(3, 4, context=0))
    assert code == Exit.OK and written == FILE.replace("x * 3", "x * 2")
    assert request.surroundings.shown() == ("", "")


def test_context_without_lines_is_refused(tmp_path):
    path = tmp_path / "calc.py"
    path.write_text(FILE)
    result = CliRunner().invoke(app, ["fix", str(path), "double it", "--context", "5"])
    assert result.exit_code == 2 and "--context is the context of a region" in result.stderr


SOURCE = '''import functools


class Wrapper:
    """Wraps text."""

    def wrap(self, text):
        return [text]

    @functools.cache
    @staticmethod
    def width():
        return 70


def wrap(text):
    def inner(part):
        return part.strip()

    return Wrapper().wrap(inner(text))


if True:
    def guarded():
        return 1
'''


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("wrap", (16, 20)),  # the module's own function, not the method of the same name
        ("Wrapper.wrap", (7, 8)),
        ("Wrapper.width", (10, 13)),  # decorators included
        ("Wrapper", (4, 13)),
        ("inner", (17, 18)),  # nested, found at any depth
        ("wrap.inner", (17, 18)),
        ("guarded", (24, 25)),  # under a statement
    ],
)
def test_a_region_can_be_a_python_function_or_class_by_name(name, lines):
    region = Region.parse(name)
    inside, surroundings = region.cut(SOURCE)
    assert (surroundings.first, surroundings.last) == lines
    assert surroundings.around(inside) == SOURCE
    assert inside == "".join(SOURCE.splitlines(keepends=True)[lines[0] - 1 : lines[1]])


def test_a_name_that_is_missing_twice_defined_or_in_no_python_is_a_clear_error():
    twice = SOURCE + "\n\ndef wrap(text):\n    return []\n"
    for text, name, message in [
        (SOURCE, "unwrap", "the file defines no function or class 'unwrap'"),
        (SOURCE, "Wrapper.inner", "no function or class 'inner'"),
        (twice, "wrap", "'wrap' is defined 2 times (lines 16, 28); give line numbers"),
        ("x = " + " + ".join(["1"] * 5000) + "\n", "f", "does not parse as Python"),  # too deep
        ("x = 1\0\n", "f", "does not parse as Python"),
        ("# Title\n\nSome *prose*.\n", "Title", "does not parse as Python (line 3"),
        ("x = 1\rdef f():\r    pass\r", "f", "ends lines with a lone CR"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            Region.parse(name).cut(text)
    with pytest.raises(ValueError, match="or the name of a Python function or class"):
        Region.parse("3-x")


def test_names_are_found_past_a_bom_deep_expressions_and_in_any_script():
    text = "\ufeffx = " + " + ".join(["1"] * 1500) + "\n\n\ndef größe(v):\n    return v\n"
    inside, surroundings = Region.parse("größe").cut(text)
    assert inside == "def größe(v):\n    return v\n" and surroundings.first == 4
    assert surroundings.around(inside) == text


def test_a_named_region_edit_keeps_everything_else(tmp_path):
    path = tmp_path / "calc.py"
    path.write_bytes(FILE.encode())
    code, written, [request] = _edit(tmp_path, Region.parse("double"))
    assert code == Exit.OK and written == FILE.replace("x * 3", "x * 2")
    assert request.text == "def double(x):\n    return x * 3\n"
    assert (request.surroundings.first, request.surroundings.last) == (3, 4)


DOCUMENTED = (
    "import math\n"
    "def scale(x, by=2):\n"
    '    """Scale x.\n'
    "\n"
    "    By two, unless told otherwise.\n"
    '    """\n'
    "    return x * 3\n"
    "\n"
    "y = 1\n"
)


def test_a_function_s_body_shows_its_whole_head_and_takes_a_head_written_again():
    """A region that is a function's body (`head`: its first line) shows the head above it
    whatever the context; an answer that opens with the function's first line again, the
    signature kept or changed, replaces the head with the body, and one that opens with the
    docstring again has it once."""
    inside, around = Region(7, 7, context=1, head=2).cut(DOCUMENTED)
    assert inside == "    return x * 3\n" and around.head.startswith("def scale(x, by=2):")
    assert around.shown()[0] == around.head and around.shown_lines() == (2, 8)
    fixed = DOCUMENTED.replace("x * 3", "x * by")
    assert around.around("    return x * by\n") == fixed
    assert around.around(around.head + "    return x * by\n") == fixed
    docstring = around.head.split("\n", 1)[1]
    assert around.around(docstring + "    return x * by\n") == fixed
    changed = "def scale(x, by=3):\n    return x * by\n"
    assert around.around(changed) == "import math\n" + changed + "\ny = 1\n"
    # a body that merely starts alike is a body
    assert around.around("    scale(x)\n") == DOCUMENTED.replace(
        "    return x * 3\n", "    scale(x)\n"
    )
