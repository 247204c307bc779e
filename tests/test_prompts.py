"""Prompt building, the closing-fence stop and extraction of the edited text."""

from __future__ import annotations

import pytest

from specedit import prompts


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


def test_build_prefills_the_fence_and_locates_the_input(tokenizer):
    text = "x = 1\ny = 2\n"
    built = prompts.build(tokenizer, prompts.load_template("fix"), text, "fix it", "python")
    rendered = tokenizer.decode(built.ids)
    assert rendered.endswith("<|im_start|>assistant\n```python\n")
    assert "fix it" in rendered
    assert tokenizer.decode(built.ids[built.input_start : built.input_end]) == text


def test_markdown_with_inner_fences_is_not_cut_at_the_first_one(tokenizer):
    text = "# Title\n\n```python\nprint(1)\n```\n\nMore text.\n"
    built = prompts.build(tokenizer, prompts.load_template("rewrite"), text, "fix", "markdown")
    assert built.fence == "````"
    answer = _answer(tokenizer, text + "````\n")
    stop = prompts.FenceStop(tokenizer, built.fence)
    stops = [i for i, token in enumerate(answer) if stop(token)]
    assert stops == [len(answer) - 1]  # only the real closing fence stops
    assert prompts.extract(tokenizer, answer, built) == text


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


def test_eos_closes_the_answer_with_or_without_a_fence(tokenizer):
    built = prompts.build(tokenizer, prompts.load_template("edit"), "a\n", "edit", "")
    assert prompts.extract(tokenizer, _answer(tokenizer, "b\n```", eos=True), built) == "b\n"
    assert prompts.extract(tokenizer, _answer(tokenizer, "b\n", eos=True), built) == "b\n"
