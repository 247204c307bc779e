"""Prompt building, the closing-fence stop and extraction of the edited text."""

from __future__ import annotations

import pytest
import torch
from helpers import ROOT, force_tokens

from specedit.editing import prompts


def _answer(tokenizer, text: str, eos: bool = False) -> list[int]:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids + ([tokenizer.convert_tokens_to_ids("<|im_end|>")] if eos else [])


def test_fence_is_longer_than_any_backtick_run():
    assert prompts.fence_for("plain text") == "```"
    assert prompts.fence_for("a ``x`` b") == "```"
    assert prompts.fence_for("```python\ncode\n```\n") == "````"
    assert prompts.fence_for("`````") == "``````"


def test_language_from_file_name():
    assert prompts.language_for("a/b/c.py") == "python"
    assert prompts.language_for("README.md") == "markdown"
    assert prompts.language_for("data.unknown") == ""
    assert prompts.language_for(None) == ""


def test_every_shipped_template_loads():
    assert {"fix", "edit", "rewrite"} <= set(prompts.available())
    for name in prompts.available():
        assert prompts.load_template(name).user


def test_unknown_and_malformed_templates_fail_clearly(tmp_path):
    with pytest.raises(prompts.PromptError, match="unknown prompt"):
        prompts.load_template("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text('system = "s"\nuser = "no fields"\n')
    with pytest.raises(prompts.PromptError, match="must contain"):
        prompts.load_template(str(bad))
    old = tmp_path / "old.toml"  # a key this version does not read is not silently ignored
    old.write_text('system = "s"\nuser = "{instruction}{fence}{text}"\nstatement = "The fix:"\n')
    with pytest.raises(prompts.PromptError, match="unknown key 'statement'"):
        prompts.load_template(str(old))


def test_build_prefills_the_fence_and_locates_the_input(tokenizer):
    text = "x = 1\ny = 2\n"
    built = prompts.build(tokenizer, prompts.load_template("fix"), text, "fix it", "python")
    rendered = tokenizer.decode(built.ids)
    assert rendered.endswith("<|im_start|>assistant\n```python\n")
    assert "fix it" in rendered
    assert tokenizer.decode(built.ids[built.input_start : built.input_end]) == text


@pytest.mark.parametrize("name", ["fix", "edit", "rewrite", "apply", "afresh"])
def test_build_locates_the_instruction_in_the_prompt_the_chat_template_renders(tokenizer, name):
    """The instruction's tokens are found as the input's are (copies from it end with it), in
    the very prompt the chat template renders from the plain messages."""
    template = prompts.load_template(name)
    text, instruction = "def f():\n    return 1\n", "  make f return 2, not 1 "
    built = prompts.build(tokenizer, template, text, instruction, "python")
    span = built.ids[built.instruction_start : built.instruction_end]
    assert tokenizer.decode(span).strip() == instruction.strip()
    assert built.input_end <= built.instruction_start
    messages = prompts.chat_messages(template, text, instruction, "python", "```")
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert built.ids == tokenizer(rendered + "```python\n", add_special_tokens=False)["input_ids"]


def test_an_instruction_written_twice_is_there_twice_and_located_at_its_first(tokenizer, tmp_path):
    path = tmp_path / "twice.toml"
    path.write_text(
        'system = "s"\nuser = "Fix: {instruction}\\n{fence}{language}\\n{text}{fence}\\n'
        'Again: {instruction}"\n'
    )
    template = prompts.load_template(str(path))
    built = prompts.build(tokenizer, template, "x = 1\n", "make x two", "python")
    rendered = tokenizer.decode(built.ids)
    assert rendered.count("make x two") == 2 and "\x00" not in rendered
    span = built.ids[built.instruction_start : built.instruction_end]
    assert tokenizer.decode(span).strip() == "make x two"
    assert built.instruction_end <= built.input_start  # the first, before the file


def test_an_edit_s_drafts_are_told_where_its_instruction_lies(tokenizer):
    fix = prompts.load_template("fix")
    built = prompts.build(tokenizer, fix, "x = 1\n", "make x two", "python")
    assert built.instruction == (built.instruction_start, built.instruction_end)
    assert built.instruction_end > built.instruction_start > built.input_end
    assert prompts.build(tokenizer, fix, "x = 1\n", " ", "python").instruction is None


def test_markdown_with_inner_fences_is_not_cut_at_the_first_one(tokenizer):
    text = "# Title\n\n```python\nprint(1)\n```\n\nMore text.\n"
    built = prompts.build(tokenizer, prompts.load_template("rewrite"), text, "fix", "markdown")
    assert built.fence == "````"
    answer = _answer(tokenizer, text + "````\n")
    stop = prompts.FenceStop(tokenizer, built)
    stops = [i for i, token in enumerate(answer) if stop(token)]
    assert stops == [len(answer) - 1]  # only the real closing fence stops
    assert prompts.extract(tokenizer, answer, built) == text


def test_a_plain_fence_after_the_inputs_own_blocks_closes_the_answer(tokenizer):
    """The runaway seen on a README with code blocks: the model closed with ``` (shorter than
    our ````) and went on writing until the token limit."""
    text = "# Title\n\n```python\nprint(1)\n```\n\nMore txet.\n"
    fixed = text.replace("txet", "text")
    built = prompts.build(tokenizer, prompts.load_template("rewrite"), text, "fix", "markdown")
    answer = _answer(tokenizer, fixed + "```\n\nI fixed the typo.\n")
    stop = prompts.FenceStop(tokenizer, built)
    first = next(i for i, token in enumerate(answer) if stop(token))
    assert tokenizer.decode(answer[: first + 1]).rstrip("\n").endswith("More text.\n```")
    assert prompts.extract(tokenizer, answer[: first + 1], built) == fixed
    # an answer that reproduces only the input's own fence lines is still open
    assert prompts.extract(tokenizer, _answer(tokenizer, fixed), built) is None


@pytest.mark.parametrize(
    "source,answer,expected",
    [
        ("a\nb\n", "a\nB\n```\n", "a\nB\n"),  # fence line
        ("a\nb", "a\nB\n```\n", "a\nB"),  # input had no trailing newline
        ("a\nb\n\n", "a\nB\n```\n", "a\nB\n\n"),  # two trailing newlines kept
        ("a\n", "a\nb\n```", None),  # fence not finished: cut off
        ("a\n", "a\nb\n", None),  # no fence at all: cut off
    ],
)
def test_extract_keeps_the_input_newline_convention(tokenizer, source, answer, expected):
    built = prompts.build(tokenizer, prompts.load_template("edit"), source, "edit", "")
    assert prompts.extract(tokenizer, _answer(tokenizer, answer), built) == expected


@pytest.mark.parametrize(
    "source,answer,expected",
    [
        ("\n\na\nb\n", "a\nB\n", "\n\na\nB\n"),  # the input's leading blank lines
        ("\n \na\n", "\na\n", "\n \na\n"),  # as they were, not the answer's
        ("a\nb\n", "\n\na\nB\n", "a\nB\n"),  # the input had none: none added
        ("\n\n", "x\n", "x\n"),  # a blank input: nothing to keep
    ],
)
def test_what_is_delivered_keeps_the_input_s_leading_blank_lines(source, answer, expected):
    prompt = prompts.EditPrompt([], "```", source, 0, 0)
    assert prompts.framed(answer, prompt) == expected


def test_eos_closes_the_answer_with_or_without_a_fence(tokenizer):
    built = prompts.build(tokenizer, prompts.load_template("edit"), "a\n", "edit", "")
    assert prompts.extract(tokenizer, _answer(tokenizer, "b\n```", eos=True), built) == "b\n"
    assert prompts.extract(tokenizer, _answer(tokenizer, "b\n", eos=True), built) == "b\n"


def _then_template(tmp_path):
    """A template that asks "Why?" after the file, then "Now the file."."""
    path = tmp_path / "think.toml"
    path.write_text(
        'system = "s"\nuser = "{fence}{language}\\n{text}{fence}\\n\\n{instruction}. Why?"\n'
        'then = "Now the file."\n'
    )
    return path


def test_a_then_template_asks_for_a_statement_first_then_for_the_file(tokenizer, tmp_path):
    path = _then_template(tmp_path)
    template = prompts.load_template(str(path))
    text = "x = 1\n"
    asking = prompts.build(tokenizer, template, text, "fix it", "python")
    assert asking.asks_statement
    assert tokenizer.decode(asking.ids).endswith("fix it. Why?<|im_end|>\n<|im_start|>assistant\n")
    answered = prompts.build(tokenizer, template, text, "fix it", "python", " x should be 2.\n")
    assert not answered.asks_statement
    assert tokenizer.decode(answered.ids).endswith(
        "<|im_start|>assistant\nx should be 2.<|im_end|>\n"
        "<|im_start|>user\nNow the file.<|im_end|>\n<|im_start|>assistant\n```python\n"
    )
    # The statement's prompt leads the file's: a warm cache computes only what follows it.
    assert answered.ids[: len(asking.ids)] == asking.ids
    assert tokenizer.decode(answered.ids[answered.input_start : answered.input_end]) == text


def test_the_instruction_may_follow_the_file(tokenizer, tmp_path):
    path = tmp_path / "after.toml"
    path.write_text('system = "s"\nuser = "{fence}{language}\\n{text}{fence}\\n\\n{instruction}"\n')
    text = "def f():\n    return 1\n"
    built = prompts.build(tokenizer, prompts.load_template(str(path)), text, "return 2", "python")
    assert tokenizer.decode(built.ids[built.input_start : built.input_end]) == text


def test_worked_examples_come_as_earlier_turns_in_the_template_s_words(tokenizer, tmp_path):
    path = tmp_path / "examples.toml"
    path.write_text(
        'system = "s"\nuser = "Fix: {instruction}\\n{fence}{language}\\n{text}{fence}"\n'
        '[[examples]]\ninstruction = " one is two "\ninput = "one = 2\\n"\noutput = "one = 1"\n'
        'language = "python"\n'
    )
    template = prompts.load_template(str(path))
    messages = prompts.chat_messages(template, "x = 1\n", "fix x", "python", "```")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "Fix: one is two\n```python\none = 2\n```"
    assert messages[2]["content"] == "```python\none = 1\n```"
    built = prompts.build(tokenizer, template, "x = 1\n", "fix x", "python")
    # The input is the edit's own, after the example that holds a code block too.
    assert tokenizer.decode(built.ids[built.input_start : built.input_end]) == "x = 1\n"
    assert built.input_start > len(tokenizer("one = 1", add_special_tokens=False)["input_ids"])
    path.write_text(path.read_text().replace("output =", "answer ="))
    with pytest.raises(prompts.PromptError, match="an example takes"):
        prompts.load_template(str(path))


def test_the_examples_variant_shows_fixes_that_change_one_line():
    """Each worked fix in tools/prompt-variants/examples changes exactly one line."""
    import difflib

    variant = ROOT / "tools" / "prompt-variants" / "examples" / "fix.toml"
    for example in prompts.load_template(str(variant)).examples:
        before, after = example.input.splitlines(), example.output.splitlines()
        changed = [line for line in difflib.ndiff(before, after) if line[:1] in "+-"]
        assert len(changed) == 2, changed


@pytest.mark.parametrize("name", ["fix", "edit", "rewrite", "apply"])
def test_every_shipped_template_puts_the_file_first_and_the_instruction_after(tokenizer, name):
    """The shipped layout (docs/quality.md, "Prompt layout"): the file in its code block, then
    the instruction next to the answer, whose code block is opened for it."""
    text, instruction = "def f():\n    return 1\n", "return two instead of one"
    built = prompts.build(tokenizer, prompts.load_template(name), text, instruction, "python")
    rendered = tokenizer.decode(built.ids)
    user = rendered[rendered.rindex("<|im_start|>user") :]
    assert user.index("```python\n" + text + "```") < user.index(instruction)
    assert rendered.endswith("<|im_start|>assistant\n```python\n")
    assert tokenizer.decode(built.ids[built.input_start : built.input_end]) == text


def test_the_statement_ends_where_a_code_block_starts_and_leads_the_file_s_prompt(
    tiny_model_dir, tokenizer, tmp_path
):
    """A `then` template's edit first lets the model say what it will change: its words up to
    the code block it starts (where the file would go), and the file's prompt is the statement
    prompt followed by them and the `then` turn."""
    from transformers import AutoModelForCausalLM

    from specedit.editing.editor import EditRequest, prepare
    from specedit.models.load import LoadedModel

    path = _then_template(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    lm = LoadedModel("scripted", model, tokenizer)  # a fresh copy: the hooks stay on it
    request = EditRequest("x = 1\n", "fix it", prompt=str(path), language="python", method="pld")
    template = prompts.load_template(str(path))
    asking = prompts.build(lm.tokenizer, template, request.text, "fix it", "python")
    said = "The bug: x is 1 where it should be 2.\n```python\nx = 2\n```\n"
    pattern = lm.tokenizer(said, add_special_tokens=False)["input_ids"]
    force_tokens(lm.model, pattern, start=len(asking.ids) - 1)
    prepared = prepare(lm, request)
    assert prepared.statement == "The bug: x is 1 where it should be 2."
    answered = prompts.build(
        lm.tokenizer, template, request.text, "fix it", "python", prepared.statement
    )
    assert prepared.prompt.ids == answered.ids and not prepared.prompt.asks_statement


@pytest.mark.parametrize(
    "text, first, past_blank",
    [
        ("x = 1\n", "x", False),
        ("\n\ndef f():\n    pass\n", "def", True),
        ("\n  \n\tif x:\n", "\t", True),
    ],
)
def test_the_answer_starts_copying_the_input_past_its_leading_blank_lines(
    tokenizer, text, first, past_blank
):
    """A file's leading blank lines share a token with its fence's line break, which the
    answer's own fence does not have: the answer's first copy starts at the first token with
    the file's text, indentation included."""
    built = prompts.build(tokenizer, prompts.load_template("fix"), text, "fix it", "python")
    assert built.input_start <= built.content_start < built.input_end
    assert tokenizer.decode(built.ids[built.content_start : built.input_end]).startswith(first)
    assert (built.content_start > built.input_start) == past_blank


def test_the_draft_sources_say_where_the_answer_opens_only_when_it_opens_there(tokenizer, tmp_path):
    from types import SimpleNamespace

    from specedit.editing.editor import EditRequest, draft_sources

    lm = SimpleNamespace(tokenizer=tokenizer, draft=None, pass_cost=lambda: None)
    request = EditRequest("\n\nx = 1\n", "fix it", prompt="fix", language="python")
    built = prompts.build(tokenizer, prompts.load_template("fix"), request.text, "fix it", "python")
    assert draft_sources(lm, request, built).first_copy == built.content_start
    redrawn = request.steered(forced=(10, 11))  # an answer resumed after its first tokens
    assert draft_sources(lm, redrawn, built).first_copy is None
    then = prompts.load_template(str(_then_template(tmp_path)))
    asking = prompts.build(tokenizer, then, request.text, "fix it", "python")
    assert draft_sources(lm, request, asking).first_copy is None  # the statement comes first
