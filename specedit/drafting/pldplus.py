"""PLD+ (h): among earlier occurrences of the last token, copy after the one whose context
looks most like the current one in a middle layer's hidden states."""

from __future__ import annotations

import torch

from specedit.drafting.base import Drafter
from specedit.drafting.memory import Memory
from specedit.engine.tree import DraftTree


def rerank(memory: Memory, layer: int, candidates: list[int], query_row: int) -> int:
    """The candidate j whose preceding hidden state H[j-1] has the highest cosine with
    H[query_row] at `layer` (PLD+ (h)'s ranking, which AdaPLD reuses)."""
    if len(candidates) == 1:
        return candidates[0]
    hidden = memory.hidden(layer)
    scores = torch.nn.functional.cosine_similarity(
        hidden[[j - 1 for j in candidates]].float(), hidden[query_row].float()[None], dim=-1
    )
    return candidates[int(scores.argmax())]


class PldPlus(Drafter):
    """Candidates j hold the last token x_t; rank them by cos(H_l[j-1], H_l[t-1]).

    The last token's own hidden state does not exist yet (it has not been fed), so the paper
    compares the states of the tokens *before* each occurrence and before the current one.
    """

    name = "pldplus"
    layer_fraction = 0.125  # which layer, as a share of the model's depth (see README)

    def __init__(self, num_layers: int, layer: int | None = None, draft_length: int = 64) -> None:
        self.layer = layer if layer is not None else max(1, round(num_layers * self.layer_fraction))
        if not 0 <= self.layer <= num_layers:
            raise ValueError(f"layer {self.layer} is outside the model's 0..{num_layers}")
        self.hidden_layers = (self.layer,)
        self.draft_length = draft_length

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tokens, last = memory.tokens, len(memory.tokens) - 1
        tree = DraftTree(root=tokens[last])
        candidates = [j for j in memory.positions.get(tokens[last], ()) if 1 <= j < last]
        if not candidates:
            return tree
        best = rerank(memory, self.layer, candidates, last - 1)
        length = min(budget, self.draft_length)
        tree.add_chain(tokens[best + 1 : best + 1 + length], first_source=best + 1)
        return tree
