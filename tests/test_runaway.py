"""Answers that loop are stopped early with a clear error, and nothing else is."""

from __future__ import annotations

import pytest
import torch

from specedit.editing.editor import EditError, EditRequest, execute, prepare
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


def _force_loop(model, pattern: list[int], start: int) -> None:
    """Make the model's greedy choice at position p be pattern[(p - start) % len(pattern)],
    whatever the context: a model stuck in a loop."""
    seen: dict[str, torch.Tensor] = {}

    def remember(_module, _args, kwargs):
        positions = kwargs.get("position_ids")
        if positions is None:  # a plain causal pass (the prefill) goes on from the cache
            done = kwargs["cache"].get_seq_length()
            positions = torch.arange(kwargs["input_ids"].shape[1]).unsqueeze(0) + done
        seen["positions"] = positions[0]

    def bias(_module, _args, logits):
        positions = seen["positions"][-logits.shape[1] :]
        targets = torch.tensor([pattern[(int(p) - start) % len(pattern)] for p in positions])
        logits[0, torch.arange(len(targets)), targets] += 1e4
        return logits

    model.register_forward_pre_hook(remember, with_kwargs=True)
    model.lm_head.register_forward_hook(bias)


def test_an_edit_whose_model_loops_stops_early_with_a_clear_error(tiny_model_dir, tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    lm = LoadedModel("looping", model, tokenizer)  # a fresh copy: the hooks stay on it
    source = "def run(total, value, step):\n    return total\n" * 3
    prepared = prepare(lm, EditRequest(source, "accumulate the values", method="pld"))
    pattern = tokenizer(LOOP, add_special_tokens=False)["input_ids"]
    _force_loop(lm.model, pattern, start=len(prepared.prompt.ids) - 1)
    committed: list[int] = []
    with pytest.raises(EditError, match="repeating itself"):
        execute(lm, prepared, lambda step: committed.extend(step.tokens))
    assert len(committed) <= 4 * len(pattern)  # stopped at the third copy, not at the limit
    assert len(committed) < prepared.max_new_tokens
