"""One generation of a prepared edit, as a bench row of a single-generation setup times it: the
engine's own decoding, llama.cpp's (llama-cpp-python), or transformers' `generate` with its
prompt lookup, each stopped at the same closing fence and counting its forward passes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from specedit.bench.llamacpp import LLAMA_CPP_METHODS, LlamaCpp
from specedit.bench.setups import BASELINES
from specedit.editing import prompts
from specedit.editing.editor import PreparedEdit, generate_edit
from specedit.engine.events import Stats
from specedit.models.load import LoadedModel


def run_once(lm: LoadedModel, prepared: PreparedEdit, method: str, llama: LlamaCpp | None) -> Run:
    """One generation of `prepared` by `method`, as a bench row times it: the engine's own,
    llama.cpp's (`LLAMA_CPP_METHODS`), or transformers' prompt lookup (`BASELINES`), each
    stopped at the same closing fence."""
    model, eos, prompt = lm.model, lm.eos_token_ids, prepared.prompt
    if method in LLAMA_CPP_METHODS:
        stop = prompts.FenceStop(lm.tokenizer, prompt)
        run = llama.run(method, prompt.ids, prepared.max_new_tokens, stop, eos)
        return Run(run.tokens, run.seconds, run.passes, run.stop)
    start = time.perf_counter()
    if method not in BASELINES or lm.engine != "torch":
        generation = generate_edit(lm, prepared)
        seconds = time.perf_counter() - start
        stats = generation.stats
        return Run(generation.tokens, seconds, stats.forward_passes, generation.stop_reason, stats)
    counter = _ForwardCounter(model)
    try:
        ids = torch.tensor([prompt.ids], device=model.device)
        stop = prompts.FenceStop(lm.tokenizer, prompt)
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=prepared.max_new_tokens,
            do_sample=False,
            prompt_lookup_num_tokens=BASELINES[method],
            stopping_criteria=StoppingCriteriaList([_FenceCriteria(stop, len(prompt.ids))]),
            pad_token_id=lm.tokenizer.pad_token_id or next(iter(eos)),
        )
        seconds = time.perf_counter() - start
    finally:
        counter.close()
    tokens = out[0, len(prompt.ids) :].tolist()
    tokens, stop = _cut(tokens, prompts.FenceStop(lm.tokenizer, prompt), eos)
    return Run(tokens, seconds, counter.calls, stop)  # the prefill pass yields the first token


@dataclass
class Run:
    tokens: list[int]
    seconds: float
    passes: int  # forward passes that produced tokens
    stop: str
    stats: Stats | None = None  # the engine's counters (None for the baselines)


class _ForwardCounter:
    """Counts the model's forward calls, whoever makes them."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls = 0
        self._handle = model.register_forward_pre_hook(self._count)

    def _count(self, *_: object) -> None:
        self.calls += 1

    def close(self) -> None:
        self._handle.remove()


class _FenceCriteria(StoppingCriteria):
    """Lets transformers' generate stop at the same closing fence as the engine."""

    def __init__(self, stop: prompts.FenceStop, prompt_length: int) -> None:
        self.stop, self.seen = stop, prompt_length

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        new = input_ids[0, self.seen :].tolist()
        self.seen = input_ids.shape[1]
        done = any([self.stop(token) for token in new])  # feed every token, in order
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


def _cut(tokens: list[int], stop: Callable[[int], bool], eos: set[int]) -> tuple[list[int], str]:
    """Tokens up to and including the first stop, and the engine's name for why it stopped."""
    for i, token in enumerate(tokens):
        if token in eos:
            return tokens[: i + 1], "eos"
        if stop(token):
            return tokens[: i + 1], "stop"
    return tokens, "length"
