"""llama.cpp's kernels as the engine's target: a GGUF file verified as it is, quantized.

The engine's loop is unchanged (draft, verify the draft in one batch, keep the accepted prefix);
only the forward passes run in llama.cpp, through llama-cpp-python. On a CPU without fast fp32
or bf16 matmuls its 4-bit kernels make both the one-token step and the batched verify pass
several times cheaper than the dequantized transformers model (README, "Engines").

Exact means here: the tokens of llama.cpp's own greedy decoding of the same file, not those of
the transformers model (tested). It verifies chains (a drafter's main copy) and returns no hidden
states, so only drafters that need neither run on it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specedit.engine.target import Pass
from specedit.engine.tree import DraftTree

CONTEXT_STEP = 4096  # contexts are sized in steps of this many tokens, and grown when needed


class GgufModel:
    """A GGUF file for llama.cpp, standing where a transformers model stands: drafters read its
    config, the engine opens a target on it. The llama.cpp context is made on first use and kept
    (a warm server reuses it) until a generation needs a longer one.

    With `reuse_prefix`, a generation keeps the KV cache of the longest prefix its prompt shares
    with what the cache already holds (the system prompt and template in a warm server, the file
    in a retry), and prefills only the rest. The kept entries were computed in other batch shapes,
    so outputs may differ from a cold run at near-ties; the bench turns it off."""

    device = torch.device("cpu")
    dtype = torch.float32  # of the logits the engine sees
    engine = "llama.cpp"  # no hidden states nor weights: only token drafters run on it

    def __init__(self, path: Path, config: Any, generation_config: Any, threads: int) -> None:
        self.path, self.config, self.generation_config = path, config, generation_config
        self.threads = threads
        self.reuse_prefix = True
        self._llm: Any = None
        self._held: list[int] = []  # the tokens whose K/V sequence 0 of the context holds

    def open_target(self, capacity: int) -> LlamaCppTarget:
        if self._llm is None or self._llm.n_ctx() < capacity:
            self._open(capacity)
            self._held = []
        if not self.reuse_prefix:
            self._held = []
        return LlamaCppTarget(self._llm, self._held)

    def _open(self, capacity: int) -> None:
        from llama_cpp import Llama

        if self._llm is not None:
            self._llm.close()
        self._llm = Llama(
            model_path=str(self.path),
            n_ctx=-(-capacity // CONTEXT_STEP) * CONTEXT_STEP,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            verbose=False,  # llama.cpp's log would go to stderr, which is specedit's
        )

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None


class LlamaCppTarget:
    """One generation on a llama.cpp context: sequence 0 of its KV cache, whose tokens `held`
    tracks (the model's list, so that the next generation knows what the cache holds)."""

    trees = False
    hidden_states = False

    def __init__(self, llm: Any, held: list[int]) -> None:
        self.llm, self.held = llm, held
        self.vocabulary = llm.n_vocab()
        self.reused = 0  # prompt tokens whose K/V were already there

    def _drop_from(self, position: int) -> None:
        self.llm._ctx.kv_cache_seq_rm(0, position, -1)
        del self.held[position:]

    def _decode(self, tokens: list[int], start: int, all_logits: bool) -> None:
        """Feed `tokens` at positions start, start + 1, ... in batches of the context's size;
        logits are kept for every token (`all_logits`) or for the last one only."""
        size = self.llm.n_batch
        for offset in range(0, len(tokens), size):
            chunk = tokens[offset : offset + size]
            self.llm._batch.set_batch(chunk, n_past=start + offset, logits_all=all_logits)
            self.llm._ctx.decode(self.llm._batch)

    def prefill(self, tokens: list[int], hidden: bool) -> None:
        shared = next(
            (i for i, (a, b) in enumerate(zip(self.held, tokens, strict=False)) if a != b),
            min(len(self.held), len(tokens)),
        )
        self._drop_from(shared)
        self._decode(tokens[shared:], shared, all_logits=False)
        self.held.extend(tokens[shared:])
        self.reused = shared

    def forward(self, tree: DraftTree, prefix_length: int, hidden: bool) -> Pass:
        if not tree.is_chain():
            raise ValueError("llama.cpp verifies chains; cut the tree to its main chain first")
        ids = [tree.root, *tree.tokens]
        if len(ids) > self.llm.n_batch:
            raise ValueError(f"a draft of {len(ids)} tokens is over one batch ({self.llm.n_batch})")
        if len(self.held) > prefix_length:  # only when no prefill emptied the cache's tail
            self._drop_from(prefix_length)
        self._decode(ids, prefix_length, all_logits=True)
        self.held.extend(ids)
        shape = (len(ids), self.vocabulary)
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=shape)
        return Pass(torch.from_numpy(logits.copy()))  # llama.cpp reuses its buffer next pass

    def keep(self, prefix_length: int, nodes: list[int]) -> None:
        # The accepted nodes of a chain are its first ones, already in place: drop the rest.
        self._drop_from(prefix_length + len(nodes))

    def clock(self) -> float:
        return time.perf_counter()
