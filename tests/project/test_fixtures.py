"""The fast tier's own tokenizer and tiny model folder: what the other tests rely on."""

from __future__ import annotations

import random
import unicodedata

from helpers import SPECIAL_TOKENS, train_tokenizer

TEXTS = [
    "def add(a, b):\n    return a - b\n",
    "naïve → café 🦜 done\r\n\ttabs\t and  double  spaces  ",
    "中文 Ελληνικά العربية 🫠🏳️‍🌈 e\u0301 \u00a0nbsp \x00 \x7f",
    "```python\nprint('x')\n```\n\n" + "word " * 50,
    "",
]


def _random_texts(count: int) -> list[str]:
    """Random code points of every plane (surrogates excluded), as short strings."""
    g = random.Random(0)
    texts = []
    for _ in range(count):
        planes = (range(32, 127), range(0x80, 0xD800), range(0xE000, 0x110000))
        chars = [chr(g.choice(g.choice(planes))) for _ in range(g.randrange(1, 40))]
        texts.append("".join(chars))
    return texts


def test_any_text_round_trips_exactly_through_the_trained_tokenizer():
    trained = train_tokenizer()
    for text in [*TEXTS, *_random_texts(200)]:
        ids = trained(text, add_special_tokens=False)["input_ids"]
        assert trained.decode(ids) == text


def test_as_loaded_it_round_trips_nfc_text_and_normalizes_the_rest_like_qwen(tokenizer):
    for text in [*TEXTS, *_random_texts(200)]:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == unicodedata.normalize("NFC", text)
    decomposed = "cafe\u0301"
    assert tokenizer.decode(tokenizer(decomposed)["input_ids"]) == "caf\u00e9"


def test_it_merges_text_and_keeps_special_tokens_whole(tokenizer):
    assert 500 <= len(tokenizer) <= 2000
    text = "    return value\n"
    assert len(tokenizer(text, add_special_tokens=False)["input_ids"]) < len(text) / 2
    for token in SPECIAL_TOKENS:
        assert tokenizer(token, add_special_tokens=False)["input_ids"] == [
            tokenizer.convert_tokens_to_ids(token)
        ]
    assert set(tokenizer.all_special_ids) == set(tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS))
    assert (tokenizer.eos_token, tokenizer.pad_token) == ("<|im_end|>", "<|endoftext|>")
    ids = tokenizer("<|im_start|>user\nhi<|im_end|>", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "user\nhi"


def test_the_chat_template_is_chatml_like_qwens(tokenizer):
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert rendered == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    )
    answered = [*messages, {"role": "assistant", "content": "A"}]
    rendered = tokenizer.apply_chat_template(answered, tokenize=False)
    assert rendered.endswith("<|im_start|>assistant\nA<|im_end|>\n")


def test_training_is_deterministic():
    first, again = train_tokenizer(), train_tokenizer()
    assert again.get_vocab() == first.get_vocab()
    text = TEXTS[0] + TEXTS[1]
    assert again(text)["input_ids"] == first(text)["input_ids"]


def test_the_tiny_model_folder_holds_the_trained_tokenizer(tiny_model_dir, tokenizer):
    from transformers import AutoConfig

    trained = train_tokenizer()
    assert tokenizer.get_vocab() == trained.get_vocab()
    for text in TEXTS:  # the loaded one normalizes first, then splits alike
        nfc = unicodedata.normalize("NFC", text)
        assert tokenizer(text)["input_ids"] == trained(nfc)["input_ids"]
    assert tokenizer.chat_template == trained.chat_template
    assert tokenizer.eos_token_id == trained.eos_token_id
    assert AutoConfig.from_pretrained(tiny_model_dir).vocab_size == len(tokenizer)
