"""What drafters may look at: every token so far, where each token occurs, stored hidden states.

The last token is committed but not yet fed to the model, so hidden states exist for every
position but the last one. Drafters read this; only the engine writes to it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from specedit.engine.target import HiddenStates


class Memory:
    """Tokens of prompt and output, a token -> positions index, and hidden states per layer."""

    def __init__(self, prompt: list[int], hidden_layers: tuple[int, ...] = ()) -> None:
        self.tokens: list[int] = []
        self.prompt_length = len(prompt)
        self.positions: defaultdict[int, list[int]] = defaultdict(list)
        self.hidden_layers = hidden_layers
        self._hidden: dict[int, torch.Tensor] = {}
        self._filled = 0
        self.extend(prompt)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, tokens: list[int]) -> None:
        for token in tokens:
            self.positions[token].append(len(self.tokens))
            self.tokens.append(token)

    def store_hidden(self, hidden_states: HiddenStates, rows: list[int]) -> None:
        """Append rows `rows` of a forward pass's hidden states (by layer: engine/target.py)
        for the layers drafters use."""
        if not self.hidden_layers:
            return
        end = self._filled + len(rows)
        for layer in self.hidden_layers:
            states = hidden_states[layer][0, rows]
            store = self._hidden.get(layer)
            if store is None or store.shape[0] < end:
                grown = states.new_empty(max(2 * end, 256), states.shape[-1])  # model's device
                if store is not None:
                    grown[: self._filled] = store[: self._filled]
                store = self._hidden[layer] = grown
            store[self._filled : end] = states
        self._filled = end

    def hidden(self, layer: int) -> torch.Tensor:
        """Hidden states of `layer` for positions 0 .. len - 2 (all but the unfed last token)."""
        return self._hidden[layer][: self._filled]
