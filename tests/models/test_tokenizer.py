"""The llama.cpp engine's tokenizer without transformers answers as transformers' tokenizer does:
the same ids and offsets, the same decoded text, the same special ids, the same rendered chat."""

from __future__ import annotations

import inspect
import json
import textwrap

import pytest

from specedit.editing import prompts
from specedit.models.tokenizer import EXPORT, ChatTokenizer

TEXTS = [
    inspect.getsource(textwrap),
    "caf\u00e9 cafe\u0301 \u65e5\u672c\u8a9e \U0001f642 \t\r\n  trailing   \n",  # NFC or not
    "<|im_start|>user\nhi<|im_end|>\n<|endoftext|> <tool_call>",  # special tokens in the text
    "",
]
CHATS = [
    [{"role": "user", "content": "Fix this file.\n\n```python\nx = 1\n```"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "caf\u00e9?"}],
    [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "again"},
    ],
]


def _exported(transformers_tokenizer, folder) -> ChatTokenizer:
    ChatTokenizer.export(transformers_tokenizer, folder)
    ours = ChatTokenizer.open(folder)
    assert ours is not None
    return ours


def _assert_answers_alike(ours: ChatTokenizer, theirs) -> None:
    for text in TEXTS:
        mine = ours(text, add_special_tokens=False, return_offsets_mapping=True)
        ref = theirs(text, add_special_tokens=False, return_offsets_mapping=True)
        assert mine["input_ids"] == ref["input_ids"]
        offsets = [tuple(o) for o in ref["offset_mapping"]]
        assert [tuple(o) for o in mine["offset_mapping"]] == offsets
        for skip in (False, True):
            assert ours.decode(mine["input_ids"], skip) == theirs.decode(
                ref["input_ids"], skip_special_tokens=skip
            )
        assert ours.convert_ids_to_tokens(mine["input_ids"]) == theirs.convert_ids_to_tokens(
            ref["input_ids"]
        )
    for name in ("eos_token_id", "pad_token_id", "bos_token_id", "unk_token_id"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert set(ours.all_special_ids) == set(theirs.all_special_ids)
    assert ours.get_vocab() == theirs.get_vocab()
    for chat in CHATS:
        for generation in (True, False):
            assert ours.apply_chat_template(
                chat, add_generation_prompt=generation, tokenize=False
            ) == theirs.apply_chat_template(chat, add_generation_prompt=generation, tokenize=False)


def test_the_exported_tokenizer_answers_as_transformers_does(tiny_model_dir, tokenizer, tmp_path):
    _copy_tokenizer(tiny_model_dir, tmp_path)
    _assert_answers_alike(_exported(tokenizer, tmp_path), tokenizer)


def test_what_it_does_not_answer_itself_goes_to_transformers(tiny_model_dir, tokenizer, tmp_path):
    _copy_tokenizer(tiny_model_dir, tmp_path)
    ours = _exported(tokenizer, tmp_path)
    chat = [*CHATS[0], {"role": "assistant", "content": "```python\nx ="}]
    assert "_full" not in vars(ours)  # nothing so far needed transformers
    assert ours.apply_chat_template(chat, continue_final_message=True, tokenize=False) == (
        tokenizer.apply_chat_template(chat, continue_final_message=True, tokenize=False)
    )
    ids = ours.apply_chat_template(CHATS[1], add_generation_prompt=True)["input_ids"]
    assert ids == tokenizer.apply_chat_template(CHATS[1], add_generation_prompt=True)["input_ids"]
    assert ours.model_max_length == tokenizer.model_max_length  # any other attribute


def test_no_export_means_transformers_reads_the_folder(tiny_model_dir, tmp_path):
    """Missing, damaged, written by another transformers version or before the model's own
    tokenizer files changed: the caller loads the tokenizer with transformers (and exports it
    again)."""
    from transformers import AutoTokenizer

    _copy_tokenizer(tiny_model_dir, tmp_path)
    assert ChatTokenizer.open(tmp_path) is None
    ChatTokenizer.export(AutoTokenizer.from_pretrained(tmp_path), tmp_path)
    assert ChatTokenizer.open(tmp_path) is not None
    saved = json.loads((tmp_path / EXPORT).read_text())
    (tmp_path / EXPORT).write_text(json.dumps({**saved, "transformers": "0.0.1"}))
    assert ChatTokenizer.open(tmp_path) is None
    (tmp_path / EXPORT).write_text(json.dumps(saved))
    config = tmp_path / "tokenizer_config.json"
    config.write_text(config.read_text() + "\n")  # the model's own file changed
    assert ChatTokenizer.open(tmp_path) is None
    (tmp_path / EXPORT).write_text("{not json")
    assert ChatTokenizer.open(tmp_path) is None


def test_templates_read_the_special_tokens_and_tools_as_transformers_gives_them(
    tiny_model_dir, tmp_path
):
    """A template that writes `bos_token` and tests `tools` (as Llama's and Mistral's do)
    renders as transformers renders it, and a file that asks for truncation is not cut."""
    from transformers import AutoTokenizer

    _copy_tokenizer(tiny_model_dir, tmp_path)
    (tmp_path / "chat_template.jinja").write_text(
        "{{ bos_token }}{% if tools is not none %}TOOLS{% endif %}"
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{{ eos_token }}\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    spec["truncation"] = {
        "direction": "Right",
        "max_length": 8,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    theirs = AutoTokenizer.from_pretrained(tmp_path)
    _assert_answers_alike(_exported(theirs, tmp_path), theirs)


def test_a_tokenizer_that_cleans_up_spaces_is_not_exported(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    _copy_tokenizer(tiny_model_dir, tmp_path)
    theirs = AutoTokenizer.from_pretrained(tmp_path)
    theirs.clean_up_tokenization_spaces = True
    ChatTokenizer.export(theirs, tmp_path)
    assert not (tmp_path / EXPORT).exists()


def _copy_tokenizer(source, folder) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "config.json"):
        (folder / name).write_bytes((source / name).read_bytes())


@pytest.mark.e2e
def test_the_bundled_model_s_tokenizer_and_edit_prompt_are_transformers_own(
    bundled_model_dir, tmp_path
):
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(bundled_model_dir)
    ours = _exported(theirs, tmp_path)
    _assert_answers_alike(ours, theirs)
    template = prompts.load_template("fix")
    text = "def add(a, b):\n    return a - b\n"
    mine = prompts.build(ours, template, text, "add must add", "python")
    assert mine == prompts.build(theirs, template, text, "add must add", "python")
