"""llama.cpp's kernels as the engine's target: a GGUF file verified as it is, quantized.

The engine's loop is unchanged (draft, verify the draft in one batch, keep the accepted prefix);
only the forward passes run in llama.cpp, through llama-cpp-python. On a CPU without fast fp32
or bf16 matmuls its 4-bit kernels make both the one-token step and the batched verify pass
several times cheaper than the dequantized transformers model (docs/engines.md).

Exact means here: the tokens of llama.cpp's own greedy decoding of the same file, not those of
the transformers model (tested). Of the hidden states it returns the final one only: each token's
state after the final norm, the one the LM head reads, which llama.cpp gives as the token's
embedding when a context's embeddings are on (pooling NONE). Drafters that compare states do so
there (engine/target.py's state_layers); intermediate layers never leave llama.cpp.

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
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from specedit.engine.llama_params import SEQUENCES, context_params

if TYPE_CHECKING:
    import torch

    from specedit.engine.target import HiddenStates, Pass
    from specedit.engine.tree import DraftTree

CONTEXT_STEP = 4096  # contexts are sized in steps of this many tokens, and grown when needed


class GgufModel:
    """A GGUF file for llama.cpp, standing where a transformers model stands: drafters read its
    config, the engine opens a target on it. The llama.cpp context is made on first use (or
    opened in the background, `open_in_background`) and kept (a warm server reuses it) until a
    generation needs a longer one.

    With `reuse_prefix`, a generation keeps the KV cache of the longest prefix its prompt shares
    with what the cache already holds (the system prompt and template in a warm server, the file
    in a retry), and prefills only the rest; with a `store` as well, it starts from a kept
    prompt head where that shares more (a cold CLI's from disk, a server's from memory: the
    last prompt on a file it read before another). The kept entries were computed in other
    batch shapes, so outputs may differ from a cold run at near-ties; the bench starts each edit
    cold (`start_cold`, without a store).

    This module imports neither torch nor transformers: an edit whose drafter reads tokens only
    (the default) runs on llama.cpp without them, and the CLI starts llama.cpp's load
    (`open_in_background`) first thing. Hidden states, which only drafters that compare them
    ask for, come as torch tensors, since those drafters compute in torch."""

    engine = "llama.cpp"  # the final hidden state only; the weights are the GGUF file's

    def __init__(
        self,
        path: Path,
        config: Any,
        generation_config: Any,
        threads: int,
        store: HeadStore | None = None,
        repack: bool = True,
    ) -> None:
        self.path, self.config, self.generation_config = path, config, generation_config
        self.threads, self.store = threads, store
        self.repack = repack  # see `relayout`
        self.reuse_prefix = True
        self._llm: Any = None
        self._opening: Future | None = None
        self._held = Held()  # what sequence 0 of the context holds

    @property
    def state_layers(self) -> tuple[int, ...]:
        """The hidden-state layers its targets return: the final normed state only."""
        return (self.config.num_hidden_layers,)

    @property
    def device(self) -> torch.device:
        import torch

        return torch.device("cpu")

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

    def start_cold(self) -> None:
        """The next generation finds nothing held, as in a fresh context; it and the ones after
        it still reuse what it computes (a measured edit that makes several generations: a
        statement and then the file, or redraws, starts cold once)."""
        self._held = Held()

    def open_target(self, capacity: int, reuse: bool = True) -> LlamaCppTarget:
        self.ready()
        if self._llm is None or self._llm.n_ctx() < capacity:
            self._use(self._new_context(capacity))
        if not (reuse and self.reuse_prefix):
            self._held = Held()
            return LlamaCppTarget(self._llm, self._held, self.state_layers)
        return LlamaCppTarget(self._llm, self._held, self.state_layers, self.store)

    def relayout(self, repack: bool) -> None:
        """Whether llama.cpp repacks the weights for the CPU's own kernels as it loads them
        (its "extra buffer types", llama.cpp's default): on some CPUs that makes narrow passes
        cheaper and the load, the prefill and wide passes dearer, on others it gains throughout,
        so which one an edit runs on is measured per machine (models/load.py). A change takes
        effect with the next context: the one open is freed."""
        if repack != self.repack:
            self.close()
            self.repack = repack

    def _new_context(self, capacity: int) -> Any:
        from llama_cpp import Llama

        with context_params(self.repack):
            return Llama(
                model_path=str(self.path),
                n_ctx=-(-capacity // CONTEXT_STEP) * CONTEXT_STEP,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                verbose=False,  # llama.cpp's log would go to stderr, which is specedit's
            )

    def _use(self, llm: Any) -> None:
        self.close()
        self._llm, self._held = llm, Held()

    def close(self) -> None:
        """Free the context; one still opening in the background is waited for, then freed."""
        if self._opening is not None:
            with contextlib.suppress(Exception):  # a load that failed has nothing to free
                self.ready()
        if self._llm is not None:
            self._llm.close()
            self._llm = None


@dataclass
class Held:
    """What sequence 0 of a context holds, kept by the model between generations: its tokens,
    and the final states of the first of them where a prefill computed them, so that a later
    prompt sharing those tokens takes their states back with their K/V."""

    tokens: list[int] = field(default_factory=list)
    states: np.ndarray | None = None  # one row for each of the first len(states) tokens

    def known(self) -> int:
        """How many leading tokens' states it holds."""
        return 0 if self.states is None else len(self.states)

    def extend(self, tokens: list[int], states: np.ndarray | None = None) -> None:
        """Append `tokens`, and their `states` where every earlier token's are held."""
        if states is not None and self.known() == len(self.tokens):
            self.states = states if self.states is None else np.concatenate([self.states, states])
        self.tokens.extend(tokens)

    def drop_from(self, position: int) -> None:
        del self.tokens[position:]
        if self.states is not None:
            self.states = self.states[:position]


class Head(NamedTuple):
    """A stored prompt head: its tokens, their K/V as llama.cpp serialises a sequence, and their
    final states where the head was computed with them."""

    tokens: list[int]
    state: bytes
    states: np.ndarray | None = None


class HeadStore(Protocol):
    """Prompt heads' K/V kept between processes, or in a server for the files it read
    (specedit/models/prefixes.py). A head is a prompt, whole; a prompt that shares part of it
    prefills the rest in other batches than a cold one would, so its output may differ at a
    near-tie, as a warm server's may."""

    def nearest(self, tokens: list[int], states: bool = False, beyond: int = 0) -> Head | None:
        """The stored head sharing the most leading tokens with `tokens`, if more than `beyond`
        (what the cache holds of them already); with `states`, only among the heads stored
        with their final states."""
        ...

    def save(self, head: list[int], state: bytes, states: np.ndarray | None = None) -> None:
        """Keep `head` (with its final `states`, where given); a store that cannot write keeps
        nothing, without raising."""
        ...


def _worth_keeping(prompt: int, held: int, reused: int) -> bool:
    """Whether a prompt is kept as a head: a cold one (a CLI's) whenever it computed anything,
    a warm one (a server's) where most of it was new, as a file it had not read."""
    return reused < prompt and (held == 0 or 2 * (prompt - reused) > prompt)


def shared_length(a: list[int], b: list[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


class LlamaCppTarget:
    """One generation on a llama.cpp context: sequence 0 of its KV cache, whose tokens `held`
    tracks (the model's `Held`, so that the next generation knows what the cache holds). With a
    `store`, a cold cache starts from the stored head nearest to the prompt, and a prompt it
    does not hold whole is left there as a head.

    A pass asked for hidden states switches the context's embeddings on for that pass only:
    llama.cpp then outputs every token of the batch (its logits too) and each one's final
    state beside its logits, which are the same as without (checked bit for bit). A generation
    that reads no states decodes as it would without them."""

    def __init__(
        self,
        llm: Any,
        held: Held,
        state_layers: tuple[int, ...],
        store: HeadStore | None = None,
    ) -> None:
        import llama_cpp

        self.llm, self.sequence, self.store = llm, held, store
        # A generative model's context pools nothing, so each token has its own state; one that
        # pools (an embedding model's) would give one state per sequence: none here, then.
        pooling = llama_cpp.llama_pooling_type(llm._ctx.ctx)
        self.state_layers = state_layers if pooling == llama_cpp.LLAMA_POOLING_TYPE_NONE else ()
        self.trees = llm.context_params.n_seq_max >= SEQUENCES  # see context_params
        self.vocabulary = llm.n_vocab()
        self.capacity = llm.n_ctx()  # the tokens its cache has room for
        self.reused = 0  # prompt tokens whose K/V were already there
        self._tree: tuple[DraftTree, list[list[int]]] | None = None  # last pass: sequences

    @property
    def held(self) -> list[int]:
        """The tokens whose K/V sequence 0 holds."""
        return self.sequence.tokens

    def _drop_from(self, position: int) -> None:
        self.llm._ctx.kv_cache_seq_rm(0, position, -1)
        self.sequence.drop_from(position)

    def _embeddings(self, on: bool) -> None:
        """Whether the next decodes also give each output token's final state."""
        import llama_cpp

        llama_cpp.llama_set_embeddings(self.llm._ctx.ctx, on)

    def _states(self, rows: int) -> np.ndarray:
        """The last decode's final states, one row per output token (a copy: llama.cpp reuses
        its buffer)."""
        shape = (rows, self.llm.n_embd())
        return np.ctypeslib.as_array(self.llm._ctx.get_embeddings(), shape=shape).copy()

    def _by_layer(self, states: np.ndarray) -> HiddenStates:
        import torch  # only drafters that read states ask for them; they compute in torch

        return {self.state_layers[-1]: torch.from_numpy(states)[None]}

    def _decode(
        self, tokens: list[int], start: int, all_logits: bool, hidden: bool = False
    ) -> np.ndarray | None:
        """Feed `tokens` at positions start, start + 1, ... in batches of the context's size;
        logits are kept for every token (`all_logits`) or for the last one only. With `hidden`,
        every token's final state is returned (every token is an output then: llama.cpp
        requires it, and says so on stderr where one is not)."""
        self._embeddings(hidden)
        size, states = self.llm.n_batch, []
        for offset in range(0, len(tokens), size):
            chunk = tokens[offset : offset + size]
            self.llm._batch.set_batch(chunk, n_past=start + offset, logits_all=all_logits or hidden)
            self.llm._ctx.decode(self.llm._batch)
            if hidden:
                states.append(self._states(len(chunk)))
        return np.concatenate(states) if states else None

    def prefill(self, tokens: list[int], hidden: bool) -> HiddenStates | None:
        # A stored head that shares more of the prompt than the cache holds replaces what the
        # cache holds: a fresh process's (a CLI's) holds nothing, a server's holds the last
        # prompt, on another file perhaps. The prompt is kept as a head where it was cold or
        # mostly new (`_worth_keeping`): the file comes first in an edit's prompt, so a second
        # instruction on the same file prefills the instruction alone. Held tokens are reused
        # only where their states are held too, if states are asked for.
        held = shared = self._reusable(tokens, hidden)
        stored = self.store is not None and held < len(tokens)  # a redraw holds all of it
        if stored and (head := self.store.nearest(tokens, hidden, beyond=held)):
            self._drop_from(0)
            self._restore(head)
            shared = self._reusable(tokens, hidden)
        self._drop_from(shared)
        self.reused = shared
        self._feed(tokens, hidden)
        if self.store is not None and _worth_keeping(len(tokens), held, shared):
            self.store.save(tokens, self._state(), self.sequence.states if hidden else None)
        return self._by_layer(self.sequence.states) if hidden else None

    def _reusable(self, tokens: list[int], hidden: bool) -> int:
        """How many leading `tokens` the cache holds (with their states, if `hidden`)."""
        shared = shared_length(self.held, tokens)
        return min(shared, self.sequence.known()) if hidden else shared

    def _feed(self, tokens: list[int], hidden: bool) -> None:
        """Prefill `tokens` past what the cache holds of them (all of it is theirs)."""
        held = len(self.held)
        states = self._decode(tokens[held:], held, all_logits=False, hidden=hidden)
        self.sequence.extend(tokens[held:], states)

    def _state(self) -> bytes:
        """Sequence 0's K/V as llama.cpp serialises it."""
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(self.llm._ctx.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(self.llm._ctx.ctx, buffer, size, 0)
        return ctypes.string_at(buffer, written)

    def _restore(self, stored: Head | None) -> None:
        """Put a stored head into the empty cache; a state llama.cpp refuses is left out."""
        if stored is None:
            return
        import llama_cpp

        state = stored.state
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if llama_cpp.llama_state_seq_set_data(self.llm._ctx.ctx, buffer, len(state), 0):
            self.sequence.extend(stored.tokens, stored.states)
        else:
            self._drop_from(0)

    def forward(self, tree: DraftTree, prefix_length: int, hidden: bool) -> Pass:
        from specedit.engine.target import Pass

        ids = [tree.root, *tree.tokens]
        if len(ids) > self.llm.n_batch:
            raise ValueError(f"a draft of {len(ids)} tokens is over one batch ({self.llm.n_batch})")
        if len(self.held) > prefix_length:  # only when no prefill emptied the cache's tail
            self._drop_from(prefix_length)
        if tree.is_chain():
            self._tree = None
            states = self._decode(ids, prefix_length, all_logits=True, hidden=hidden)
            self.held.extend(ids)
        else:
            states = self._decode_tree(tree, prefix_length, hidden)
        shape = (len(ids), self.vocabulary)
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=shape)
        by_layer = self._by_layer(states) if hidden else None
        return Pass(logits.copy(), by_layer)  # a copy: llama.cpp reuses its buffer

    def _decode_tree(self, tree: DraftTree, prefix_length: int, hidden: bool) -> np.ndarray | None:
        """One batch over every node of `tree`, each in the sequences of the leaves below it;
        each node's final state with `hidden`."""
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
        self._embeddings(hidden)
        self.llm._ctx.decode(self.llm._batch)
        return self._states(len(tree)) if hidden else None

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
