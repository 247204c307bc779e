"""What the engine verifies drafts with: a model and its KV cache, behind three calls.

One generation opens a target (an empty cache), prefills the prompt, then repeats forward (one
pass over a draft tree) and keep (only the accepted path stays in the cache). Two kinds exist: a
transformers model (trees, every layer's hidden states, any dtype and device) and a GGUF file run
by llama.cpp's kernels (engine/llamacpp.py: trees as one batch of several KV-cache sequences, the
final hidden state only, its own quantized weights).

Only the transformers target imports torch, when it is made: an edit on llama.cpp whose drafter
reads tokens only runs without it (its import takes seconds of a cold edit).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import torch

    from specedit.engine.tree import DraftTree

# Hidden states by layer, each (1, tokens, hidden): 0 is the embeddings, then each layer's output,
# num_hidden_layers the final normed state that the LM head reads. A transformers model gives
# every layer (its output tuple), llama.cpp the final one only (a dict).
HiddenStates: TypeAlias = "tuple[torch.Tensor, ...] | dict[int, torch.Tensor]"


@dataclass
class Pass:
    # (nodes, vocabulary): the model's scores after each tree node, as its engine made them (a
    # tensor on the torch engine's device, a NumPy array from llama.cpp: engine/arrays.py)
    logits: np.ndarray | torch.Tensor
    hidden_states: HiddenStates | None = None


class Target(Protocol):
    trees: bool  # verifies a branching tree in one pass; if not, drafts are cut to their chain
    state_layers: Collection[int]  # the hidden-state layers it returns (see state_layers)

    def prefill(self, tokens: list[int], hidden: bool) -> HiddenStates | None:
        """Feed `tokens` into the cache past what it already holds of them (an empty cache: all
        of them; none: a score from the first token on); the fed tokens' hidden states if
        `hidden`."""
        ...

    def forward(self, tree: DraftTree, prefix_length: int, hidden: bool) -> Pass: ...

    def keep(self, prefix_length: int, nodes: list[int]) -> None:
        """Keep the first `prefix_length` tokens and then the last pass's `nodes` (its
        accepted path); with no nodes, nothing past the prefix."""
        ...

    def clock(self) -> float: ...


def without_autograd(function: Callable) -> Callable:
    """Runs `function` in torch's inference mode wherever torch is loaded, so that nothing
    records gradients, and without it where torch is not, so that an edit on llama.cpp with a
    token-only drafter never imports it. A KV cache filled with autograd on keeps every pass's
    activations alive for as long as it lives: gigabytes over a measurement's probe."""

    @functools.wraps(function)
    def run(*args, **kwargs):
        torch = sys.modules.get("torch")
        with torch.inference_mode() if torch is not None else contextlib.nullcontext():
            return function(*args, **kwargs)

    return run


def open_target(model, capacity: int, reuse: bool = True) -> Target:
    """A target with an empty cache for `model`: a transformers model, or anything that opens its
    own (a GGUF model) with room for `capacity` tokens. Without `reuse`, a model that keeps
    prompt prefixes between generations neither uses nor keeps any (a measurement's probe)."""
    opener = getattr(model, "open_target", None)
    return opener(capacity, reuse) if opener else TransformersTarget(model)


def state_layers(model) -> Collection[int]:
    """The hidden-state layers a target of `model` returns, as HiddenStates indexes them: every
    one on transformers; a model that gives fewer says which (llama.cpp: the final one), so
    that drafters compare states at a layer that exists there."""
    given = getattr(model, "state_layers", None)
    return range(model.config.num_hidden_layers + 1) if given is None else given


class TransformersTarget:
    """A transformers causal LM and a DynamicCache; trees go in as one pass with a tree mask.
    Its calls run without autograd whoever makes them (a generation, a cost probe, a score)."""

    trees = True

    def __init__(self, model) -> None:
        from transformers import DynamicCache  # here: the llama.cpp engine never imports it

        self.model = model
        self.cache = DynamicCache(config=model.config)
        self.state_layers = state_layers(model)

    @without_autograd
    def prefill(self, tokens: list[int], hidden: bool) -> HiddenStates | None:
        import torch

        tokens = tokens[self.cache.get_seq_length() :]
        if not tokens:  # nothing it does not hold
            return None
        # No mask is passed, so attention takes its causal path instead of an n x n mask.
        out = self.model(
            input_ids=torch.tensor([tokens], device=self.model.device),
            cache=self.cache,
            use_cache=True,
            output_hidden_states=hidden,
            logits_to_keep=1,  # its logits are never used
        )
        return out.hidden_states

    @without_autograd
    def forward(self, tree: DraftTree, prefix_length: int, hidden: bool) -> Pass:
        ids, positions, mask = tree.inputs(prefix_length, self.model.dtype, self.model.device)
        out = self.model(
            input_ids=ids,
            position_ids=positions,
            attention_mask=mask,
            cache=self.cache,
            use_cache=True,
            output_hidden_states=hidden,
        )
        return Pass(out.logits[0], out.hidden_states)

    @without_autograd
    def keep(self, prefix_length: int, nodes: list[int]) -> None:
        from specedit.engine.cache import keep_path

        keep_path(self.cache, prefix_length, nodes)

    def clock(self) -> float:
        """perf_counter once the device's queued work is done, so stage times hold on a GPU."""
        if self.model.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.model.device)
        return time.perf_counter()
