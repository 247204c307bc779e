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

import contextlib
import ctypes
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch

    from specedit.engine.target import Pass
    from specedit.engine.tree import DraftTree

CONTEXT_STEP = 4096  # contexts are sized in steps of this many tokens, and grown when needed


class GgufModel:
    """A GGUF file for llama.cpp, standing where a transformers model stands: drafters read its
    config, the engine opens a target on it. The llama.cpp context is made on first use (or
    opened in the background, `open_in_background`) and kept (a warm server reuses it) until a
    generation needs a longer one.

    With `reuse_prefix`, a generation keeps the KV cache of the longest prefix its prompt shares
    with what the cache already holds (the system prompt and template in a warm server, the file
    in a retry), and prefills only the rest; with a `store` as well, a fresh context (a cold
    CLI) starts from the prompt's head kept on disk. The kept entries were computed in other
    batch shapes, so outputs may differ from a cold run at near-ties; the bench turns it off.

    This module imports neither torch nor transformers at its top, so that the CLI can start
    llama.cpp's load (`open_in_background`) before it imports them."""

    engine = "llama.cpp"  # no hidden states nor weights: only token drafters run on it

    def __init__(
        self,
        path: Path,
        config: Any,
        generation_config: Any,
        threads: int,
        store: HeadStore | None = None,
    ) -> None:
        self.path, self.config, self.generation_config = path, config, generation_config
        self.threads, self.store = threads, store
        self.reuse_prefix = True
        self._llm: Any = None
        self._opening: Future | None = None
        self._held: list[int] = []  # the tokens whose K/V sequence 0 of the context holds

    @property
    def device(self) -> torch.device:
        import torch

        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:  # of the logits the engine sees
        import torch

        return torch.float32

    def open_in_background(self, capacity: int) -> None:
        """Start opening a context for `capacity` tokens on a thread. llama.cpp reads and
        repacks the weights in C without holding the GIL, so the imports and the tokenizer load
        meanwhile."""
        # llama.cpp reports each step of the load through llama-cpp-python's log callback, in
        # Python: thousands of calls that each wait for the GIL. Handing the GIL over more often
        # (every 0.1 ms instead of the default 5 ms) makes the load end sooner during torch's
        # import.
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)
        pool = ThreadPoolExecutor(max_workers=1)
        self._opening = pool.submit(self._new_context, capacity)
        pool.shutdown(wait=False)  # the thread ends with the load

    def ready(self) -> None:
        """Wait for a context opened in the background, if one is being opened."""
        if self._opening is not None:
            try:
                llm = self._opening.result()
            finally:
                self._opening = None
                sys.setswitchinterval(self._switch_interval)
            self._use(llm)

    def open_target(self, capacity: int, reuse: bool = True) -> LlamaCppTarget:
        self.ready()
        if self._llm is None or self._llm.n_ctx() < capacity:
            self._use(self._new_context(capacity))
        if not (reuse and self.reuse_prefix):
            self._held = []
            return LlamaCppTarget(self._llm, self._held)
        return LlamaCppTarget(self._llm, self._held, self.store)

    def _new_context(self, capacity: int) -> Any:
        from llama_cpp import Llama

        return Llama(
            model_path=str(self.path),
            n_ctx=-(-capacity // CONTEXT_STEP) * CONTEXT_STEP,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            verbose=False,  # llama.cpp's log would go to stderr, which is specedit's
        )

    def _use(self, llm: Any) -> None:
        self.close()
        self._llm, self._held = llm, []

    def close(self) -> None:
        """Free the context; one still opening in the background is waited for, then freed."""
        if self._opening is not None:
            with contextlib.suppress(Exception):  # a load that failed has nothing to free
                self.ready()
        if self._llm is not None:
            self._llm.close()
            self._llm = None


class HeadStore(Protocol):
    """Prompt heads' K/V kept between processes (specedit/models/prefixes.py). A head is at most one
    prefill batch, so that cutting a prompt there changes no batch."""

    def nearest(self, tokens: list[int]) -> tuple[list[int], bytes] | None:
        """The stored head sharing the most leading tokens with `tokens`, and its state."""
        ...

    def save(self, head: list[int], state: bytes) -> None:
        """Keep `head`; a store that cannot write keeps nothing, without raising."""
        ...


def shared_length(a: list[int], b: list[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


class LlamaCppTarget:
    """One generation on a llama.cpp context: sequence 0 of its KV cache, whose tokens `held`
    tracks (the model's list, so that the next generation knows what the cache holds). With a
    `store`, a cold cache starts from the stored head nearest to the prompt, and a prompt whose
    head is new leaves it there."""

    trees = False
    hidden_states = False

    def __init__(self, llm: Any, held: list[int], store: HeadStore | None = None) -> None:
        self.llm, self.held, self.store = llm, held, store
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
        # Cold: the cache holds nothing of this prompt (a fresh process, or a probe's tokens).
        # Then a stored head may give it a start, and its own head is kept for the next cold
        # process; a warm cache (a server's) neither reads nor writes heads.
        shared = shared_length(self.held, tokens)
        cold = self.store is not None and shared == 0
        if cold:
            self._drop_from(0)
            self._restore(self.store.nearest(tokens))
            shared = shared_length(self.held, tokens)
        self._drop_from(shared)
        self.reused = shared
        if cold and shared < len(head := tokens[: self.llm.n_batch]):
            self._feed(head)
            self.store.save(head, self._state())
        self._feed(tokens)

    def _feed(self, tokens: list[int]) -> None:
        """Prefill `tokens` past what the cache holds of them (all of it is theirs)."""
        held = len(self.held)
        self._decode(tokens[held:], held, all_logits=False)
        self.held.extend(tokens[held:])

    def _state(self) -> bytes:
        """Sequence 0's K/V as llama.cpp serialises it."""
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(self.llm._ctx.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(self.llm._ctx.ctx, buffer, size, 0)
        return ctypes.string_at(buffer, written)

    def _restore(self, stored: tuple[list[int], bytes] | None) -> None:
        """Put a stored head into the empty cache; a state llama.cpp refuses is left out."""
        if stored is None:
            return
        import llama_cpp

        head, state = stored
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if llama_cpp.llama_state_seq_set_data(self.llm._ctx.ctx, buffer, len(state), 0):
            self.held.extend(head)
        else:
            self._drop_from(0)

    def forward(self, tree: DraftTree, prefix_length: int, hidden: bool) -> Pass:
        import torch  # here, not at the top: see GgufModel

        from specedit.engine.target import Pass

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
