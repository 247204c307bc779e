"""PLD+ (a): rank earlier occurrences of the last token by the attention of induction heads.

Induction heads attend, from the token before the current one, to the token that followed an
earlier occurrence of it: the one to copy next. Which heads do that is a property of the model, so
it is found once by calibration (paper §4.2.1): on prompts with known answers, count for every head
how often its attention peaks at the input position the output token was copied from. The ranking
is cached per model; the drafter then scores candidates by the chosen heads' attention (eq. 2).

The engine runs SDPA, which returns no attention weights, so the drafter recomputes the few rows it
needs from the stored inputs of the chosen heads' layers, keeping the rotated keys between steps.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from specedit.bench.tasks import load_tasks
from specedit.drafting.base import Drafter
from specedit.drafting.memory import Memory
from specedit.drafting.semantic import _weights_key
from specedit.engine.tree import DraftTree
from specedit.models import LoadedModel, cache_dir

# The paper's best was the top 50 of Vicuna-7B's 1024 heads (5%): 10-50 heads scored the same,
# 100 or more (10%+) worse, as weakly ranked heads add noise to the max. Fewer heads also mean
# fewer layers whose keys the drafter must keep. So the default keeps the same share.
HEAD_SHARE = 0.05

Sequences = Sequence[tuple[Sequence[int], int]]  # (prompt + output tokens, where the output starts)


class RankedHead(NamedTuple):
    layer: int
    head: int
    hits: int  # copy events at which this head's attention peaked at the copied position


class CalibrationMissing(ValueError):
    """No attention-head calibration is cached for this model."""

    def __init__(self) -> None:
        super().__init__(
            "pldplus-attn needs to know the model's induction heads, and no calibration is cached "
            "for this model: run `specedit calibrate` once (with the same --model)"
        )


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


def _heads_path(model) -> Path:
    # In bf16, so a model loaded in fp32 finds the calibration made in bf16: the ranking is a
    # property of the weights, not of the load dtype.
    weights = model.get_input_embeddings().weight.detach()[::61].to(torch.bfloat16)
    return cache_dir() / "calibration" / f"heads-{_weights_key(weights)}.json"


def save_heads(model, heads: Sequence[RankedHead], info: dict[str, object] | None = None) -> Path:
    """Cache the ranked heads for `model`, with `info` on how they were found (atomically:
    readers never see half a file)."""
    path = _heads_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"heads": [list(h) for h in heads], **(info or {})}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def load_heads(model) -> list[tuple[int, int]] | None:
    """The cached (layer, head) pairs for `model`, best first, or None if never calibrated."""
    try:
        data = json.loads(_heads_path(model).read_text())
    except FileNotFoundError:
        return None
    return [(layer, head) for layer, head, _ in data["heads"]]


def bench_sequences(
    lm: LoadedModel, method: str = "pldplus", progress: Callable[[str], None] | None = None
) -> list[tuple[list[int], int]]:
    """(prompt + answer tokens, answer start) for every task of the shipped bench suite, with the
    model's own greedy answers (any exact method gives the same tokens; pldplus is fast)."""
    # Imported here: specedit.edit imports the drafter registry, which imports this module.
    from specedit.edit import EditRequest, generate_edit, prepare

    sequences = []
    for task in load_tasks():
        request = EditRequest(
            task.input, task.instruction, prompt=task.kind, language=task.language, method=method
        )
        prepared = prepare(lm, request)
        if progress:
            progress(task.id)
        generation = generate_edit(lm, prepared)
        sequences.append((prepared.prompt.ids + generation.tokens, len(prepared.prompt.ids)))
    return sequences


def calibrate(
    lm: LoadedModel, sequences: Sequences | None = None, top: int | None = None
) -> list[RankedHead]:
    """Find and cache `lm`'s induction heads; what `specedit calibrate` runs.

    Call `calibrate(models.load(name, dtype))` to calibrate on the shipped bench suite (it
    generates the answers first, which is most of the time), or pass your own `sequences` of
    (prompt + output tokens, output start). Prints progress to stderr; returns the heads kept.
    """

    def say(message: str) -> None:
        print(f"specedit: {message}", file=sys.stderr, flush=True)

    if sequences is None:
        sequences = bench_sequences(lm, progress=lambda task: say(f"generating {task}"))
    heads = calibrate_heads(
        lm.model, sequences, top, progress=lambda done: say(f"counted {done}/{len(sequences)}")
    )
    events = sum(len(copy_targets(tokens, start)) for tokens, start in sequences)
    info = {"model": lm.name, "sequences": len(sequences), "events": events}
    path = save_heads(lm.model, heads, info)
    say(f"kept {len(heads)} heads from {events} copy events in {len(sequences)} sequences: {path}")
    return heads


class _LayerHeads(NamedTuple):
    """What one layer needs to score its chosen heads, with projections in fp32."""

    norm: torch.nn.Module
    q_weight: torch.Tensor  # the chosen heads' rows of q_proj only
    q_bias: torch.Tensor | None
    k_weight: torch.Tensor
    k_bias: torch.Tensor | None
    groups: list[tuple[int, torch.Tensor, torch.Tensor]]  # kv head, its heads' query, out rows


def _rows_of(linear: torch.nn.Linear, rows: torch.Tensor | slice):
    """Rows of a projection's weight and bias, in fp32."""
    bias = None if linear.bias is None else linear.bias.detach()[rows].float()
    return linear.weight.detach()[rows].float(), bias


class HeadAttention:
    """Attention rows of chosen heads, recomputed from their layers' stored inputs.

    For query position n - 1 over keys 0 .. n - 1, as eager attention computes them: the layer's
    input norm, q/k projections with bias, the model's rotary embedding, GQA sharing and scaling,
    then a softmax over all keys. Rotated keys are kept, so a call projects only the positions
    stored since the last one and costs O(chosen heads x positions) on top.
    """

    def __init__(self, model, heads: Sequence[tuple[int, int]]) -> None:
        self.heads = list(heads)
        self.layers = sorted({layer for layer, _ in self.heads})
        decoder, config = model.model, model.config
        first = decoder.layers[self.layers[0]].self_attn
        self._apply_rotary = importlib.import_module(type(first).__module__).apply_rotary_pos_emb
        self._rotary = decoder.rotary_emb
        self.head_dim, self.scaling = first.head_dim, first.scaling
        self.device = first.q_proj.weight.device
        self.num_kv_heads = config.num_key_value_heads
        group = config.num_attention_heads // self.num_kv_heads
        self._parts: dict[int, _LayerHeads] = {}
        for layer in self.layers:
            module = decoder.layers[layer]
            chosen = [(row, h) for row, (lay, h) in enumerate(self.heads) if lay == layer]
            q_rows = torch.tensor(
                [h * self.head_dim + i for _, h in chosen for i in range(self.head_dim)]
            )
            groups = []
            for kv in sorted({h // group for _, h in chosen}):
                mine = [(i, row) for i, (row, h) in enumerate(chosen) if h // group == kv]
                groups.append((kv, *(torch.tensor(column) for column in zip(*mine, strict=True))))
            self._parts[layer] = _LayerHeads(
                module.input_layernorm,
                *_rows_of(module.self_attn.q_proj, q_rows),
                *_rows_of(module.self_attn.k_proj, slice(None)),
                groups,
            )
        self._keys: dict[int, torch.Tensor] = {}  # layer -> [kv heads, capacity, head_dim], fp32
        self._filled = 0

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """The model's own rotary function; it rotates a (q, k) pair, so x goes in as both."""
        return self._apply_rotary(x, x, cos, sin)[0]

    def _store(self, layer: int, keys: torch.Tensor, start: int, end: int) -> torch.Tensor:
        store = self._keys.get(layer)
        if store is None or store.shape[1] < end:
            grown = keys.new_empty(self.num_kv_heads, max(2 * end, 256), self.head_dim)
            if store is not None:
                grown[:, :start] = store[:, :start]
            store = self._keys[layer] = grown
        store[:, start:end] = keys
        return store[:, :end]

    @torch.inference_mode()
    def rows(self, memory: Memory) -> torch.Tensor:
        """[chosen heads, n] attention of the last stored position n - 1 over positions 0..n-1."""
        n = len(memory.hidden(self.layers[0]))
        start = min(self._filled, n - 1)  # the query's position is always projected anew
        positions = torch.arange(start, n, device=self.device)[None]
        probe = torch.empty(0, device=self.device)  # the rotary module reads only its dtype, device
        cos, sin = self._rotary(probe, positions)
        out = torch.empty(len(self.heads), n, device=self.device)
        for layer, part in self._parts.items():
            hidden = part.norm(memory.hidden(layer)[start:n]).float()
            keys = torch.nn.functional.linear(hidden, part.k_weight, part.k_bias)
            keys = keys.view(1, n - start, self.num_kv_heads, self.head_dim).transpose(1, 2)
            keys = self._store(layer, self._rotate(keys, cos, sin)[0], start, n)
            query = torch.nn.functional.linear(hidden[-1:], part.q_weight, part.q_bias)
            query = query.view(1, 1, -1, self.head_dim).transpose(1, 2)
            query = self._rotate(query, cos[:, -1:], sin[:, -1:])[0, :, 0]  # [chosen, head_dim]
            for kv, q_rows, out_rows in part.groups:
                scores = query[q_rows] @ keys[kv].T * self.scaling
                out[out_rows] = torch.softmax(scores, dim=-1)
        self._filled = n
        return out


class PldPlusAttention(Drafter):
    """Candidates j hold the last token x_t; rank them by the chosen heads' attention (eq. 2):
    max over heads of the attention of position t - 1 on j, then copy after the best."""

    name = "pldplus-attn"

    def __init__(
        self, model, heads: Sequence[tuple[int, int]] | None = None, draft_length: int = 64
    ) -> None:
        heads = heads if heads is not None else load_heads(model)
        if not heads:
            raise CalibrationMissing()
        self.attention = HeadAttention(model, heads)
        self.hidden_layers = tuple(self.attention.layers)
        self.draft_length = draft_length

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tokens, last = memory.tokens, len(memory.tokens) - 1
        tree = DraftTree(root=tokens[last])
        candidates = [j for j in memory.positions[tokens[last]] if 1 <= j < last]
        if not candidates:
            return tree
        best = candidates[0]
        if len(candidates) > 1:
            scores = self.attention.rows(memory)[:, candidates].amax(dim=0)
            best = candidates[int(scores.argmax())]
        length = min(budget, self.draft_length)
        tree.add_chain(tokens[best + 1 : best + 1 + length], first_source=best + 1)
        return tree
