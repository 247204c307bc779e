"""Keep only the accepted path of a tree pass in the KV cache.

A verify pass appends K/V for every tree node. Afterwards the cache must look exactly as if the
accepted tokens alone had been fed: their entries are gathered into consecutive slots right after
the prefix and everything past them is cropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import DynamicCache


def keep_path(cache: DynamicCache, prefix_length: int, nodes: list[int]) -> None:
    """Keep tree nodes `nodes` (indices into the last pass, in path order) after the prefix."""
    total = cache.get_seq_length()
    if nodes != list(range(len(nodes))):  # a pure prefix of the pass is already in place
        index = torch.tensor(nodes, dtype=torch.long) + prefix_length
        for layer in cache.layers:
            index = index.to(layer.keys.device)
            end = prefix_length + len(nodes)
            layer.keys[..., prefix_length:end, :] = layer.keys.index_select(-2, index)
            layer.values[..., prefix_length:end, :] = layer.values.index_select(-2, index)
    cache.crop(-(total - prefix_length - len(nodes)))
