"""An edit of a long file narrows itself to the function the instruction is about, and to
nothing where the instruction is about the whole file or no function stands out."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest
import typer
from helpers import ScriptedEditor
from rich.console import Console
from typer.testing import CliRunner

from specedit.cli import app
from specedit.cli.deliver import edit_file
from specedit.cli.exits import Exit
from specedit.cli.output import Delivery
from specedit.editing.editor import EditRequest, context_estimate, cut_off
from specedit.editing.localize import BODY_FILE_LINES, CONTEXT_LINES, LONG_FILE_LINES, locate
from specedit.editing.region import Region

TOPICS = [
    ("parse_header", "header", "Split a mail header into its name and its value."),
    ("read_config", "config", "Read the settings file into a dictionary of options."),
    ("render_table", "table", "Draw the rows as a table with padded columns."),
    ("send_message", "message", "Send the message to every recipient over the socket."),
    ("compress_block", "block", "Squeeze a block of bytes with run-length encoding."),
    ("checksum", "digest", "Add up the bytes of a digest modulo 65521."),
]


def _function(name: str, noun: str, doc: str) -> str:
    body = "\n".join(f"    {noun}_{i} = {noun}[{i}:] or {noun}" for i in range(30))
    doc = f'    """{doc}\n\n    Give it a {noun}.\n    """\n'
    return f"def {name}({noun}):\n{doc}{body}\n    return {noun}_0\n\n\n"


HEAD = 5  # lines before a function's body: its signature and docstring


class_text = textwrap.dedent(
    '''\
    class Inbox:
        """Messages waiting to be read."""

        def unread(self):
            """How many messages nobody opened yet."""
            return sum(1 for message in self.messages if not message.opened)

        def archive(self, message):
            """Move a message to the archive folder."""
            self._move(message, self.archived)

        def _move(self, message, folder):
            self.messages.remove(message)
            folder.append(message)


    '''
)
LONG = "import os\n\n\n" + "".join(_function(*topic) for topic in TOPICS) + class_text


def _locate(text: str, instruction: str, language: str = "python", mode: str = "fix"):
    return locate(EditRequest(text, instruction, language=language, mode=mode))


def _lines_of(name: str) -> tuple[int, int]:
    found = (n for n in ast.walk(ast.parse(LONG)) if isinstance(n, ast.FunctionDef))
    function = next(n for n in found if n.name == name)
    return function.lineno, function.end_lineno


def test_the_long_file_is_long():
    assert LONG.count("\n") >= LONG_FILE_LINES


@pytest.mark.parametrize(
    ("instruction", "name", "why"),
    [
        ("read_config() drops the last option", "read_config", "named in the instruction"),
        ("`compress_block` loses a byte", "compress_block", "named in the instruction"),
        ("Inbox.unread counts opened messages too", "Inbox.unread", "named in the instruction"),
        ("unread() counts opened messages too", "Inbox.unread", "named in the instruction"),
        # no name: the words that only one function holds
        ("the padded columns of the table are one short", "render_table", "words"),
        ("mail headers are split in the wrong place", "parse_header", "words"),
    ],
)
def test_the_function_the_instruction_is_about_is_the_region(instruction, name, why):
    located = _locate(LONG, instruction, mode="edit")
    assert located is not None and located.name == name
    assert why in located.why
    first, last = _lines_of(name.split(".")[-1])
    assert (located.region.first, located.region.last) == (first, last)
    assert located.region.context == CONTEXT_LINES


def test_a_fix_writes_the_body_of_a_documented_function_its_head_shown():
    """A fix rewrites the code after the docstring, the head (signature and docstring) shown
    above it, where the instruction does not speak of the head; an edit, which may add a
    parameter, and a fix that speaks of the head rewrite the whole function."""
    first, last = _lines_of("read_config")
    located = _locate(LONG, "read_config() drops the last option")
    assert (located.region.first, located.region.last) == (first + HEAD, last)
    assert located.region.head == first and "its body" in located.why
    _, around = located.region.cut(LONG)
    assert around.head.startswith("def read_config(config):\n")
    assert around.head.endswith('    Give it a config.\n    """\n')
    for speaks_of_the_head in (
        "read_config() drops the last option: its docstring says so",
        "read_config() must take a default argument",
        "read_config() has the wrong type hints",
    ):
        whole = _locate(LONG, speaks_of_the_head)
        assert (whole.region.first, whole.region.last, whole.region.head) == (first, last, None)
    for short_head in ("Inbox._move loses the message", "Inbox.unread counts opened ones"):
        assert _locate(LONG, short_head).region.head is None  # no docstring, or one line


@pytest.mark.parametrize(
    "instruction",
    [
        "fix every typo in the docstrings",  # about the whole file
        "add type hints to all functions",
        "rename compress_block to squeeze",
        "it crashes",  # no word that says where
        "the result is wrong sometimes",
    ],
)
def test_an_instruction_about_the_whole_file_or_nowhere_edits_it_whole(instruction):
    assert _locate(LONG, instruction) is None


def test_a_file_of_100_lines_or_more_has_a_fix_of_a_documented_function_s_body_narrowed():
    """From BODY_FILE_LINES a fix is narrowed to a function's body (its head shown), and
    only that: the whole function, an edit, stays a file of LONG_FILE_LINES or more's."""
    middle = "".join(_function(*topic) for topic in TOPICS[:3]) + class_text
    assert BODY_FILE_LINES <= middle.count("\n") < LONG_FILE_LINES
    located = _locate(middle, "read_config() drops the last option")
    first = middle.split("\n").index("def read_config(config):") + 1
    assert (located.region.first, located.region.head) == (first + HEAD, first)
    assert _locate(middle, "read_config() drops the last option", mode="edit") is None
    assert _locate(middle, "read_config() has the wrong type hints") is None  # the head
    assert _locate(middle, "Inbox.unread counts opened ones") is None  # a one-line docstring


def test_short_files_other_languages_and_other_modes_are_edited_whole():
    short = "".join(_function(*topic) for topic in TOPICS[:2])
    assert short.count("\n") < LONG_FILE_LINES
    named = "read_config() drops the last option"
    assert _locate(short, named) is None
    assert _locate(LONG, named, language="markdown") is None
    assert _locate(LONG, named, mode="rewrite") is None
    assert _locate(LONG, named, mode="edit").name == "read_config"
    broken = LONG.replace("def checksum(digest):", "def checksum(digest:")
    assert _locate(broken, named) is None
    # Python breaks lines at a lone CR, a region does not: their line numbers would differ
    assert _locate(LONG.replace("\n", "\r", 3), named) is None


def test_the_region_is_the_function_alone_not_what_it_calls():
    """A region of several functions makes the model answer with the one it changed and drop
    the others; where the bug lies in a helper, the answer runs past the region and the whole
    file is edited (`test_an_answer_that_goes_past_the_chosen_region_...`)."""
    located = _locate(LONG, "Inbox.archive() loses the message", mode="edit")
    assert located.name == "Inbox.archive"
    first, last = _lines_of("archive")
    assert (located.region.first, located.region.last) == (first, last)


def test_a_name_defined_twice_is_told_apart_by_the_words():
    far = textwrap.dedent(
        '''\
        class Outbox:
            def unread(self):
                """Drafts never sent."""
                return [draft for draft in self.drafts if not draft.sent]
        '''
    )
    twice = far + LONG
    located = _locate(twice, "unread() lists drafts that were sent")
    assert located is not None and located.name == "Outbox.unread"
    assert _locate(twice, "unread() is wrong") is None  # nothing tells them apart


def test_an_attribute_of_an_instance_is_its_class_s_own_or_inherited():
    """`Cls(...).name` names the method of that class, or of the first of its bases in the
    file that has it, where the method's name alone is in several classes."""
    far = textwrap.dedent(
        '''\
        class Outbox:
            def unread(self):
                """Drafts never sent."""
                return [draft for draft in self.drafts if not draft.sent]


        class Mailbox(Outbox):
            """A mailbox is an outbox with a name."""
        '''
    )
    twice = far + LONG
    assert _locate(twice, "unread() is wrong") is None  # nothing tells them apart
    assert _locate(twice, "Outbox().unread() is wrong").name == "Outbox.unread"
    assert _locate(twice, "`Inbox(store).unread()` is wrong").name == "Inbox.unread"
    assert _locate(twice, "Mailbox('home').unread() is wrong").name == "Outbox.unread"
    assert _locate(twice, "Mailbox.unread is wrong").name == "Outbox.unread"


def test_words_alone_choose_a_function_only_when_it_stands_out():
    # "message" is in send_message and in Inbox's methods: no function stands out
    assert _locate(LONG, "the message goes missing") is None


def _slicing() -> ScriptedEditor:
    """Takes one character off the first slice of the text it is asked for."""
    return ScriptedEditor(lambda text: text.replace("[0:]", "[1:]", 1))


def _edit(tmp_path, instruction, **options):
    path = tmp_path / "long.py"
    path.write_text(LONG)
    stats = tmp_path / "stats.json"
    editor = _slicing()
    code = edit_file(
        editor,
        str(path),
        EditRequest("", instruction, prompt="fix"),
        Delivery(in_place=True, quiet=True, stats_file=stats),
        Console(stderr=True),
        **options,
    )
    return code, path.read_text(), editor.requests, json.loads(stats.read_text())


def test_a_narrowed_edit_asks_for_the_function_and_writes_the_whole_file(tmp_path):
    code, written, [request], stats = _edit(tmp_path, "read_config() is off by one", narrow=True)
    first, last = _lines_of("read_config")
    body = first + HEAD  # after the signature and the docstring, which a fix shows
    assert code == Exit.OK
    assert request.text == "".join(LONG.splitlines(keepends=True)[body - 1 : last])
    assert (request.surroundings.first, request.surroundings.last) == (body, last)
    # only the region's first copy changed; every line outside it is the file's own
    assert written == LONG.replace("config[0:]", "config[1:]", 1)
    region = stats["region"]
    assert region["lines"] == [body, last] and region["name"] == "read_config"
    assert region["why"] == "named in the instruction; its body, the signature and docstring shown"
    assert region["shown"] == [body - CONTEXT_LINES, last + CONTEXT_LINES]


def test_without_narrowing_the_whole_file_is_edited(tmp_path):
    code, written, [request], stats = _edit(tmp_path, "read_config() is off by one")
    assert code == Exit.OK and request.text == LONG and request.surroundings is None
    assert "region" not in stats
    assert written == LONG.replace("header[0:]", "header[1:]", 1)  # the file's first copy


def test_whole_and_lines_are_refused_together_before_a_model_loads(tmp_path):
    from typer.testing import CliRunner

    from specedit.cli import app

    path = tmp_path / "long.py"
    path.write_text(LONG)
    result = CliRunner().invoke(app, ["fix", str(path), "x", "--lines", "1-2", "--whole"])
    assert result.exit_code == 2 and "choose one" in result.stderr


class PastTheRegionEditor(ScriptedEditor):
    """A model that, asked for a region, goes on past it to its token limit."""

    def __init__(self) -> None:
        super().__init__(_slicing().change)

    def edit(self, request, on_start=None, on_step=None):
        if request.surroundings is not None:
            self.requests.append(request)
            raise cut_off(100, request.surroundings)
        return super().edit(request, on_start, on_step)


def test_an_answer_that_goes_past_the_chosen_region_is_made_for_the_whole_file(tmp_path, capsys):
    path = tmp_path / "long.py"
    path.write_text(LONG)
    editor = PastTheRegionEditor()
    code = edit_file(
        editor,
        str(path),
        EditRequest("", "read_config() is off by one", prompt="fix"),
        Delivery(in_place=True),
        Console(stderr=True),
        narrow=True,
    )
    assert code == Exit.OK
    narrowed, whole = editor.requests
    assert narrowed.surroundings is not None and narrowed.text != LONG
    assert whole.surroundings is None and whole.text == LONG
    assert path.read_text() == LONG.replace("header[0:]", "header[1:]", 1)
    said = capsys.readouterr().err
    assert "editing read_config (lines" in said and "--whole edits all of it" in said
    assert "the answer went on past read_config; editing the whole file" in said


def test_the_model_is_loaded_for_the_region_a_long_file_s_edit_reads(tmp_path, monkeypatch):
    """The context is opened before the first edit, sized by a guess of its tokens; sized for
    a long file's whole text it takes seconds and gigabytes more than the function the edit
    reads (one too small is opened again, larger, if the whole file is edited after all)."""
    contexts = []

    def load_model(*args):
        contexts.append(args[-1])
        raise typer.Exit(Exit.MODEL)

    monkeypatch.setattr("specedit.cli.commands.load_model", load_model)
    path = tmp_path / "mail.py"
    path.write_text(LONG)
    for flags in ([], ["--whole"], ["--lines", "checksum", "--context", "5"]):
        result = CliRunner().invoke(app, ["fix", str(path), "read_config() drops it", *flags])
        assert result.exit_code == Exit.MODEL
    narrowed, whole, given = contexts

    def shown(region: Region) -> int:
        inside, surroundings = region.cut(LONG)
        before, after = surroundings.shown()
        return context_estimate(before + inside + after, None, inside)

    assert whole == context_estimate(LONG)
    first, last = _lines_of("read_config")
    body = Region(first + HEAD, last, context=CONTEXT_LINES, head=first)
    assert narrowed == shown(body) < whole
    assert given == shown(Region(*_lines_of("checksum"), context=5)) < narrowed
