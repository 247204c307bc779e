"""llama.cpp's kernels as the engine's target: a GGUF file verified as it is, quantized.

The engine's loop is unchanged (draft, verify the draft in one batch, keep the accepted prefix);
only the forward passes run in llama.cpp, through llama-cpp-python. On a CPU without fast fp32
or bf16 matmuls its 4-bit kernels make both the one-token step and the batched verify pass
several times cheaper than the dequantized transformers model (README, "Engines").

Exact means here: the tokens of llama.cpp's own greedy decoding of the same file, not those of
the transformers model (tested). It returns no hidden states, so only drafters that read none run
on it.

A draft tree is verified in one batch as llama.cpp's own speculative examples do: each leaf's
path is a sequence of the KV cache, a node shared by several paths carries each of their sequence
ids, positions are prefix length + depth, and the prefix is shared by every sequence (llama.cpp's
mask lets a token see the cells of its sequence at or before its position: its ancestors). The
accepted path's cells already sit at the right positions, so keeping it is bookkeeping: drop its
sequence past the path, drop every other sequence, and call what is left sequence 0.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
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
# KV-cache sequences of a context: one per leaf of a draft tree, so at least the most drafted
# tokens a tree may hold (engine/options.py's MAX_DRAFT) plus the root.
SEQUENCES = 65
_OPENING = threading.Lock()  # see _context_params


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

        with _context_params():
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


@contextlib.contextmanager
def _context_params():
    """While a `Llama` is made, its context gets SEQUENCES sequences in one unified KV cache
    (cells shared by sequences, as a tree's prefix and shared nodes are; split caches would
    give each sequence a fraction of the context). `Llama` takes neither setting, so the
    defaults it starts from are swapped for the time of its construction, one at a time. A
    llama-cpp-python without unified caches keeps one sequence: its targets verify chains."""
    import llama_cpp.llama_cpp as low

    defaults = low.llama_context_default_params

    def params():
        made = defaults()
        if any(name == "kv_unified" for name, _ in made._fields_):
            made.n_seq_max = SEQUENCES
            made.kv_unified = True
        return made

    with _OPENING:
        low.llama_context_default_params = params
        try:
            yield
        finally:
            low.llama_context_default_params = defaults


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

    hidden_states = False

    def __init__(self, llm: Any, held: list[int], store: HeadStore | None = None) -> None:
        self.llm, self.held, self.store = llm, held, store
        self.trees = llm.context_params.n_seq_max >= SEQUENCES  # see _context_params
        self.vocabulary = llm.n_vocab()
        self.capacity = llm.n_ctx()  # the tokens its cache has room for
        self.reused = 0  # prompt tokens whose K/V were already there
        self._tree: tuple[DraftTree, list[list[int]]] | None = None  # last pass: sequences

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

        ids = [tree.root, *tree.tokens]
        if len(ids) > self.llm.n_batch:
            raise ValueError(f"a draft of {len(ids)} tokens is over one batch ({self.llm.n_batch})")
        if len(self.held) > prefix_length:  # only when no prefill emptied the cache's tail
            self._drop_from(prefix_length)
        if tree.is_chain():
            self._tree = None
            self._decode(ids, prefix_length, all_logits=True)
            self.held.extend(ids)
        else:
            self._decode_tree(tree, prefix_length)
        shape = (len(ids), self.vocabulary)
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=shape)
        return Pass(torch.from_numpy(logits.copy()))  # llama.cpp reuses its buffer next pass

    def _decode_tree(self, tree: DraftTree, prefix_length: int) -> None:
        """One batch over every node of `tree`, each in the sequences of the leaves below it."""
        import llama_cpp

        sequences = _sequences(tree)
        leaves = 1 + max(max(s) for s in sequences)
        if leaves > SEQUENCES:
            raise ValueError(f"a draft of {leaves} leaves is over the context's {SEQUENCES}")
        memory = self.llm._ctx.memory
        for s in range(1, leaves):  # each path sees the prefix, and nothing left from before
            llama_cpp.llama_memory_seq_rm(memory, s, -1, -1)
            llama_cpp.llama_memory_seq_cp(memory, 0, s, -1, -1)
        batch = self.llm._batch.batch
        batch.n_tokens = len(tree)
        for node, (depth, ids) in enumerate(zip(tree.depths(), sequences, strict=True)):
            batch.token[node] = tree.token(node)
            batch.pos[node] = prefix_length + depth
            batch.n_seq_id[node] = len(ids)
            for k, s in enumerate(ids):
                batch.seq_id[node][k] = s
            batch.logits[node] = True
        self._tree = (tree, sequences)
        self.llm._ctx.decode(self.llm._batch)

    def keep(self, prefix_length: int, nodes: list[int]) -> None:
        if self._tree is None:
            # The accepted nodes of a chain are its first ones, already in place: drop the rest.
            self._drop_from(prefix_length + len(nodes))
            return
        import llama_cpp

        tree, sequences = self._tree
        self._tree = None
        # The path's cells hold positions prefix_length + depth already: keep one sequence
        # through its last node, cut past the path, drop the others, and make it sequence 0.
        kept = min(sequences[nodes[-1]])
        memory = self.llm._ctx.memory
        llama_cpp.llama_memory_seq_rm(memory, kept, prefix_length + len(nodes), -1)
        llama_cpp.llama_memory_seq_keep(memory, kept)
        if kept != 0:
            llama_cpp.llama_memory_seq_cp(memory, kept, 0, -1, -1)
            llama_cpp.llama_memory_seq_rm(memory, kept, -1, -1)
        self.held.extend(tree.token(node) for node in nodes)

    def clock(self) -> float:
        return time.perf_counter()


def _sequences(tree: DraftTree) -> list[list[int]]:
    """The sequence ids of each node: one per leaf below it (or itself), numbered depth first
    with first children first, so that the main chain's leaf is sequence 0."""
    children = tree.children()
    ids: list[list[int]] = [[] for _ in range(len(tree))]
    stack, leaves = [0], 0
    while stack:
        node = stack.pop()
        if not children[node]:
            walk = node
            while walk >= 0:
                ids[walk].append(leaves)
                walk = tree.parent(walk)
            leaves += 1
        stack.extend(reversed(children[node]))
    return ids
