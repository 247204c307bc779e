"""Find a model's induction heads for PLD+ (a) (paper §4.2.1): on prompts with known answers,
count for every head how often its attention peaks at the input position the output token was
copied from, and keep the heads that do it most (`specedit.drafting.copying.heads` reads them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from specedit.drafting.artefacts import save_artefact
from specedit.drafting.copying.heads import heads_path

# The paper's best was the top 50 of Vicuna-7B's 1024 heads (5%): 10-50 heads scored the same,
# 100 or more (10%+) worse, as weakly ranked heads add noise to the max. Fewer heads also mean
# fewer layers whose keys the drafter must keep. So the default keeps the same share.
HEAD_SHARE = 0.05

Sequences = Sequence[tuple[Sequence[int], int]]  # (prompt + output tokens, where the output starts)


class RankedHead(NamedTuple):
    layer: int
    head: int
    hits: int  # copy events at which this head's attention peaked at the copied position


def default_top(model) -> int:
    """How many heads to keep: HEAD_SHARE of all the model's heads."""
    config = model.config
    return max(1, round(HEAD_SHARE * config.num_hidden_layers * config.num_attention_heads))


def copy_targets(tokens: Sequence[int], output_start: int) -> list[tuple[int, int]]:
    """(query position p - 1, source r*) for every output token at p that was copyable.

    P holds the input positions with the same token; r* is the one whose preceding tokens match
    the output before p for longest. Tokens whose longest match is tied are skipped: which copy
    the model followed is then unknown. Match lengths are carried from one token to the next:
    the match at (p + 1, r) is one longer than the one at (p, r - 1) when r - 1 holds tokens[p] too.
    """
    occurrences: dict[int, list[int]] = {}
    for r in range(output_start):
        occurrences.setdefault(tokens[r], []).append(r)
    targets = []
    previous: dict[int, int] = {}  # r -> match length, for the previous output token
    for p in range(output_start, len(tokens)):
        current = {r: previous.get(r - 1, -1) + 1 for r in occurrences.get(tokens[p], ())}
        if current:
            longest = max(current.values())
            best = [r for r, length in current.items() if length == longest]
            if len(best) == 1:
                targets.append((p - 1, best[0]))
        previous = current
    return targets


def count_hits(attention: torch.Tensor, targets: Sequence[tuple[int, int]]) -> torch.Tensor:
    """Per head, how many targets (query, source) have the query's attention peak at the source.

    `attention` is one layer's weights, [heads, queries, keys]; returns [heads] counts.
    """
    if not targets:
        return torch.zeros(attention.shape[0], dtype=torch.long)
    queries, sources = (
        torch.tensor(column, device=attention.device) for column in zip(*targets, strict=True)
    )
    peaks = attention[:, queries, :].argmax(dim=-1)  # [heads, targets]
    return (peaks == sources).sum(dim=-1).cpu()


@torch.inference_mode()
def calibrate_heads(
    model,
    sequences: Sequences,
    top: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[RankedHead]:
    """The `top` heads (default: `default_top`) that most often attend where the output copies
    from, with their hit counts, best first; heads that never hit are left out.

    One eager forward pass per sequence; a hook on every attention module reduces its weights to
    counts as soon as they exist, so only one layer's [heads, n, n] weights live at a time.
    `progress` is called with the number of sequences done.
    """
    config = model.config
    counts = torch.zeros(config.num_hidden_layers, config.num_attention_heads, dtype=torch.long)
    targets: list[tuple[int, int]] = []

    def hook(layer: int):
        def count(module, args, output) -> None:
            counts[layer] += count_hits(output[1][0], targets)

        return count

    previous = config._attn_implementation
    model.set_attn_implementation("eager")  # SDPA computes no weights to look at
    handles = [
        layer.self_attn.register_forward_hook(hook(index))
        for index, layer in enumerate(model.model.layers)
    ]
    try:
        for done, (tokens, output_start) in enumerate(sequences, start=1):
            targets = copy_targets(tokens, output_start)
            if targets:
                ids = torch.tensor([list(tokens)], device=model.device)
                model(input_ids=ids, use_cache=False, logits_to_keep=1)
            if progress:
                progress(done)
    finally:
        for handle in handles:
            handle.remove()
        model.set_attn_implementation(previous)
    ranked = sorted(
        (
            RankedHead(layer, head, int(counts[layer, head]))
            for layer, head in counts.nonzero().tolist()
        ),
        key=lambda h: (-h.hits, h.layer, h.head),
    )
    return ranked[: top if top is not None else default_top(model)]


def save_heads(model, heads: Sequence[RankedHead], info: dict[str, object] | None = None) -> Path:
    """Cache the ranked heads for `model`, with `info` on how they were found."""
    data = {"heads": [list(h) for h in heads], **(info or {})}
    return save_artefact(heads_path(model), lambda tmp: tmp.write_text(json.dumps(data, indent=1)))
