"""Answers that loop are stopped early with a clear error, and nothing else is."""

from __future__ import annotations

import pytest
import torch
from helpers import force_tokens

from specedit.editing.editor import EditError, EditRequest, prepare
from specedit.editing.local import execute
from specedit.editing.runaway import RUNAWAY, RunawayGuard
from specedit.models.load import LoadedModel

LOOP = "    total = combine(total, value)\n    value = advance(value, step)\n"


def _feed(guard: RunawayGuard, tokenizer, text: str) -> int | None:
    """Feed `text` token by token; the index of the token that fired, if any."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return next((i for i, token in enumerate(ids) if guard(token) == RUNAWAY), None)


def _guard(tokenizer, input_text: str) -> RunawayGuard:
    return RunawayGuard(lambda token: tokenizer.decode([token]), input_text)


def test_a_repeating_block_fires_on_its_third_copy(tokenizer):
    answer = "def run(total, value, step):\n" + LOOP * 6
    fired = _feed(_guard(tokenizer, "def run(total, value, step):\n    pass\n"), tokenizer, answer)
    assert fired is not None
    done = tokenizer.decode(tokenizer(answer, add_special_tokens=False)["input_ids"][: fired + 1])
    assert done.count(LOOP) == 3


def test_repeats_that_the_input_has_are_not_a_loop(tokenizer):
    text = "def run(total, value, step):\n" + LOOP * 4
    assert _feed(_guard(tokenizer, text), tokenizer, text) is None


def test_short_repeated_lines_are_not_a_loop(tokenizer):
    answer = "a = [\n" + "    0,\n" * 30 + "]\n\n\n\n\n" + "}\n" * 10
    assert _feed(_guard(tokenizer, "a = []\n"), tokenizer, answer) is None


def test_an_edit_whose_model_loops_stops_early_with_a_clear_error(tiny_model_dir, tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    lm = LoadedModel("looping", model, tokenizer)  # a fresh copy: the hooks stay on it
    source = "def run(total, value, step):\n    return total\n" * 3
    prepared = prepare(lm, EditRequest(source, "accumulate the values", method="pld"))
    pattern = tokenizer(LOOP, add_special_tokens=False)["input_ids"]
    force_tokens(lm.model, pattern, start=len(prepared.prompt.ids) - 1)
    committed: list[int] = []
    with pytest.raises(EditError, match="repeating itself"):
        execute(lm, prepared, lambda step: committed.extend(step.tokens))
    assert len(committed) <= 4 * len(pattern)  # stopped at the third copy, not at the limit
    assert len(committed) < prepared.max_new_tokens
