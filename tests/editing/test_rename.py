"""A rename the model began is finished (editing/rename.py)."""

from __future__ import annotations

from specedit.editing.rename import finish_rename

SOURCE = '''def get_close_matches(word, possibilities, n=3):
    """Return the best matches.

    possibilities is a list of sequences.
    The best matches among the possibilities are returned.
    """
    # look at each of the possibilities
    for x in possibilities:
        print(x, "no possibilities left")
    return possibilities


def other(possibilities):
    return possibilities
'''
INSTRUCTION = "Rename the parameter `possibilities` of `get_close_matches` to `candidates`."
BEGUN = SOURCE.replace("word, possibilities", "word, candidates").replace(
    "    possibilities is", "    candidates is"
)


def test_the_occurrences_the_model_left_in_the_named_definition_are_renamed():
    text, renamed = finish_rename(SOURCE, BEGUN, INSTRUCTION)
    function = text.split("\n\n\ndef other")[0]
    assert "among the candidates are returned" in function  # the docstring
    assert "# look at each of the candidates" in function  # a comment
    assert "for x in candidates:" in function and "return candidates" in function
    assert '"no possibilities left"' in function  # a message may mean the word
    assert text.endswith("def other(possibilities):\n    return possibilities\n")  # not named
    assert [str(c) for c in renamed] == ["possibilities -> candidates"] * 4
    lines = BEGUN.split("\n")
    assert all(lines[c.line][c.start : c.end] == "possibilities" for c in renamed)


def test_without_a_named_definition_the_whole_file_is_the_scope():
    text, renamed = finish_rename(SOURCE, BEGUN, "Rename `possibilities` to `candidates`.")
    assert "def other(candidates):\n    return candidates\n" in text
    assert len(renamed) == 6


def test_nothing_is_renamed_where_the_model_began_no_rename_or_none_was_asked():
    assert finish_rename(SOURCE, SOURCE, INSTRUCTION) == (SOURCE, [])
    assert finish_rename(SOURCE, BEGUN, "Make the parameter names clearer.") == (BEGUN, [])
    # a builtin is not renamed by name
    shadowing = SOURCE.replace("possibilities", "list")
    begun = shadowing.replace("word, list", "word, candidates")
    assert finish_rename(shadowing, begun, "Rename `list` to `candidates`.") == (begun, [])
    broken = BEGUN.replace("return possibilities", "return (possibilities")
    assert finish_rename(SOURCE, broken, INSTRUCTION) == (broken, [])


def test_the_editor_finishes_a_rename_in_python_and_says_so(tiny_model_dir, monkeypatch):
    from specedit.editing.editor import EditRequest, prepare
    from specedit.editing.local import execute
    from specedit.engine.events import Generation, Stats
    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")

    def generate_edit(lm, prepared, on_step=None, stop=None, timings=None, show_forced=True):
        tokens = lm.tokenizer(BEGUN + "```\n", add_special_tokens=False)["input_ids"]
        return Generation(tokens, "eos", Stats(new_tokens=len(tokens)))

    monkeypatch.setattr("specedit.editing.local.generate_edit", generate_edit)
    for language, finished in (("python", True), ("", False)):
        request = EditRequest(SOURCE, INSTRUCTION, language=language, method="pld")
        result = execute(lm, prepare(lm, request))
        assert ("return candidates" in result.text) == finished
        assert len(result.corrections) == (4 if finished else 0)
        assert result.before_passes == ({"rename": BEGUN} if finished else {})


def test_an_answer_nested_past_the_parsers_stack_is_left_as_it_is():
    deep = "x = a" + "[0]" * 100_000 + "\n"  # ast's RecursionError
    original = "def total(a):\n    return a\n" + deep
    text = original.replace("def total(a)", "def summed(a)")
    assert finish_rename(original, text, "rename `total` to `summed`") == (text, [])


def test_the_stats_name_the_passes_that_changed_the_answer(tmp_path):
    import json

    from helpers import ScriptedEditor
    from rich.console import Console

    from specedit.cli.deliver import edit_file
    from specedit.cli.output import Delivery
    from specedit.editing.editor import EditRequest, Mode

    path, stats = tmp_path / "difflib_part.py", tmp_path / "stats.json"
    path.write_text(SOURCE)
    finished = finish_rename(SOURCE, BEGUN, INSTRUCTION)[0]
    editor = ScriptedEditor(lambda text: finished, passes={"rename": BEGUN})
    template = EditRequest("", INSTRUCTION, prompt="edit", mode=Mode.EDIT)
    delivery = Delivery(in_place=True, quiet=True, stats_file=stats)
    assert edit_file(editor, str(path), template, delivery, Console(stderr=True)) == 0
    assert path.read_text() == finished
    assert json.loads(stats.read_text())["passes"] == ["rename"]
