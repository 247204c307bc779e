"""PLD+ (a): rank earlier occurrences of the last token by the attention of induction heads.

Induction heads attend, from the token before the current one, to the token that followed an
earlier occurrence of it: the one to copy next. Which heads do that is a property of the model,
found once by calibration (`specedit.calibrate.heads`) and cached per model; the ranker then
scores candidates by the chosen heads' attention (eq. 2).

The engine runs SDPA, which returns no attention weights, so the ranker recomputes the few rows it
needs from the stored inputs of the chosen heads' layers, keeping the rotated keys between steps.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from specedit.drafting import DrafterUnavailable
from specedit.drafting.artefacts import artefact_path
from specedit.drafting.copying.copy import occurrences
from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree


def heads_path(model) -> Path:
    """Where the ranked heads of `model` are cached. Keyed in bf16, so a model loaded in fp32
    finds the calibration made in bf16: the ranking is a property of the weights, not of the
    load dtype."""
    weights = model.get_input_embeddings().weight.detach()[::61].to(torch.bfloat16)
    return artefact_path("calibration", "heads", weights, ".json")


def load_heads(model) -> list[tuple[int, int]] | None:
    """The cached (layer, head) pairs for `model`, best first, or None if never calibrated."""
    try:
        data = json.loads(heads_path(model).read_text())
    except FileNotFoundError:
        return None
    return [(layer, head) for layer, head, _ in data["heads"]]


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


class AttentionRanker:
    """PLD+ (a): candidates j hold the last token x_t; rank them by the chosen heads' attention
    (eq. 2): max over heads of the attention of position t - 1 on j."""

    def __init__(self, model, heads: Sequence[tuple[int, int]] | None = None) -> None:
        heads = heads if heads is not None else load_heads(model)
        if not heads:
            raise DrafterUnavailable(
                "pldplus-attn needs to know the model's induction heads, and no calibration is "
                "cached for this model: run `specedit calibrate` once (with the same --model)"
            )
        self.attention = HeadAttention(model, heads)
        self.hidden_layers = tuple(self.attention.layers)

    def anchor(self, memory: Memory) -> int | None:
        last = len(memory) - 1
        candidates = occurrences(memory, memory.tokens[last], last)
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        scores = self.attention.rows(memory)[:, candidates].amax(dim=0)
        return candidates[int(scores.argmax())]

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        pass
