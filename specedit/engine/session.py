"""One generation: prefill, then draft -> verify -> accept -> commit until a stop.

The engine knows nothing about how drafts are made: it asks the drafter for a tree, verifies the
whole tree in one forward pass, walks it with the model's own choices, keeps the accepted path in
the KV cache and memory, and reports each step as an event.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from transformers import DynamicCache

from specedit.engine.cache import keep_path
from specedit.engine.drafter import Drafter
from specedit.engine.events import Generation, Stats, Step, StopCondition
from specedit.engine.memory import Memory
from specedit.engine.options import GREEDY, STRICT, Sampling, Verification
from specedit.engine.tree import DraftTree
from specedit.engine.verify import Verifier


def _forward(model, cache: DynamicCache, tree: DraftTree, prefix_length: int, hidden: bool):
    """One pass over the tree's nodes; `hidden` returns every layer's states (for drafters that
    keep some)."""
    ids, positions, mask = tree.inputs(prefix_length, model.dtype, model.device)
    return model(
        input_ids=ids,
        position_ids=positions,
        attention_mask=mask,
        past_key_values=cache,
        use_cache=True,
        output_hidden_states=hidden,
    )


def _clock(device: torch.device) -> float:
    """perf_counter once the device's queued work is done, so stage times hold on a GPU too."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


@torch.inference_mode()
def generate(
    model,
    prompt: list[int],
    drafter: Drafter,
    *,
    max_new_tokens: int,
    sampling: Sampling = GREEDY,
    verification: Verification = STRICT,
    eos_token_ids: set[int] = frozenset(),
    max_draft: int = 64,
    stop: StopCondition | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> Generation:
    """Generate up to `max_new_tokens` after `prompt`, exactly as plain decoding would (unless
    `verification` is conditional, which is lossy on purpose)."""
    if not prompt:
        raise ValueError("the prompt is empty")
    started = _clock(model.device)
    stats = Stats(prompt_tokens=len(prompt))
    verifier = Verifier(sampling, verification)
    memory = Memory(prompt, drafter.hidden_layers)
    cache = DynamicCache(config=model.config)
    hidden = bool(drafter.hidden_layers)

    # Prefill: all prompt tokens but the last, which becomes the first tree's root. No mask is
    # passed, so attention takes its causal path instead of an n x n mask (long files).
    if len(prompt) > 1:
        out = model(
            input_ids=torch.tensor([prompt[:-1]], device=model.device),
            past_key_values=cache,
            use_cache=True,
            output_hidden_states=hidden,
            logits_to_keep=1,  # its logits are never used
        )
        memory.store_hidden(out.hidden_states, list(range(len(prompt) - 1)))
    stats.prefill_seconds = _clock(model.device) - started

    new_tokens: list[int] = []
    stop_reason: str | None = "length"
    while len(new_tokens) < max_new_tokens:
        prefix_length = len(memory) - 1
        t0 = _clock(model.device)
        budget = min(max_draft, max_new_tokens - len(new_tokens) - 1)
        tree = drafter.propose(memory, budget) if budget > 0 else DraftTree(memory.tokens[-1])
        t1 = _clock(model.device)
        out = _forward(model, cache, tree, prefix_length, hidden)
        t2 = _clock(model.device)
        stats.draft_seconds += t1 - t0
        stats.verify_seconds += t2 - t1
        stats.forward_passes += 1
        stats.drafted_tokens += len(tree) - 1

        acceptance = verifier.walk(tree, out.logits[0], eos_token_ids)
        drafter.observe(tree, acceptance.path)
        kept = [0, *acceptance.path]
        keep_path(cache, prefix_length, kept)
        memory.store_hidden(out.hidden_states, kept)

        step = Step(
            tokens=[tree.token(n) for n in acceptance.path] + [acceptance.next_token],
            sources=[tree.source(n) for n in acceptance.path] + [None],
            kinds=[tree.kind(n) for n in acceptance.path] + [None],
            drafted=len(tree) - 1,
            relaxed=[*acceptance.relaxed, False],
        )
        stop_reason = _commit(step, new_tokens, max_new_tokens, eos_token_ids, stop)
        memory.extend(step.tokens)
        stats.accepted_tokens += min(len(acceptance.path), len(step.tokens))
        stats.relaxed_tokens += sum(step.relaxed[: len(step.tokens)])
        stats.accepted_lengths[len(acceptance.path)] += 1
        stats.accepted_paths[_path_kind(tree, acceptance.path)] += 1
        if on_step:
            on_step(step)
        if stop_reason:
            break

    stats.new_tokens = len(new_tokens)
    stats.drafting = drafter.report()
    stats.total_seconds = _clock(model.device) - started
    return Generation(new_tokens, stop_reason or "length", stats)


def _path_kind(tree: DraftTree, path: list[int]) -> str:
    """Name the accepted path by the kinds along it: "none", "main", "branch+successor", ..."""
    if not path:
        return "none" if len(tree) > 1 else "no draft"
    return "+".join(dict.fromkeys(tree.kind(node) for node in path))


def _commit(
    step: Step,
    new_tokens: list[int],
    max_new_tokens: int,
    eos_token_ids: set[int],
    stop: StopCondition | None,
) -> str | None:
    """Append the step's tokens one at a time, cutting the step at the first stop.

    Returns why generation must stop ("eos", "length", the stop condition's reason), or None.
    """
    for i, token in enumerate(step.tokens):
        new_tokens.append(token)
        reason = None
        if token in eos_token_ids:
            reason = "eos"
        elif stop is not None and (said := stop(token)):
            reason = said if isinstance(said, str) else "stop"
        elif len(new_tokens) >= max_new_tokens:
            reason = "length"
        if reason:
            del step.tokens[i + 1 :], step.sources[i + 1 :], step.kinds[i + 1 :]
            del step.relaxed[i + 1 :]
            return reason
    return None
