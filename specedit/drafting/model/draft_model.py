"""A small draft model with its own KV cache and, optionally, a dynamic vocabulary (EvoSpec).

The draft model shares the target's tokenizer and runs beside it: before each draft it catches
its cache up with the committed tokens (dropping its own rejected drafts), then proposes a greedy
chain. One class per engine behind the same calls (`catch_up`, `chain`, `lag`, `steps`): a
transformers model (`DraftModel`) and a GGUF file on llama.cpp (`LlamaCppDraftModel`, a second
context run through the engine's own target contract).

Its choices may be restricted to an active vocabulary:

- a static core: the most frequent tokens of the standard library's sources;
- the document's own tokens (the prompt holds the input);
- a dynamic set of at most `budget` tokens kept by ARC, filled when a committed token fell
  outside the active vocabulary: the missed token, on torch the target's top tokens at that
  position (its LM-head HNSW index) and the missed token's embedding neighbours, and the bigram
  successors of all of them.

On torch the LM head is sliced to the active tokens, because on a small model the head is a
large share of each step (151k x 896 of the 0.5B's ~494M parameters). llama.cpp gives no
weights, only the whole head's logits: there the argmax is taken over the active tokens' logits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
import torch

from specedit.drafting.model.arc import ARC
from specedit.drafting.model.cooccurrence import TokenStatistics
from specedit.engine.options import MAX_DRAFT
from specedit.engine.target import open_target
from specedit.engine.tree import DraftTree

if TYPE_CHECKING:
    from specedit.engine.llamacpp import LlamaCppTarget

MAX_INSERTED = 32  # tokens one miss may add (the paper's cap per failure event)


class ActiveVocabulary:
    """The tokens a draft model may propose out of `size`, and with a `head` (torch) the LM head
    sliced to them."""

    def __init__(
        self,
        size: int,
        core: np.ndarray,
        document: Iterable[int],
        statistics: TokenStatistics | None,
        budget: int,
        head: torch.Tensor | None = None,
    ) -> None:
        fixed = np.union1d(core, np.fromiter(document, dtype=np.int64))
        fixed = fixed[fixed < size]
        self.device = head.device if head is not None else torch.device("cpu")
        self.fixed_ids = torch.from_numpy(fixed).to(self.device)
        self.fixed_head = head[self.fixed_ids].contiguous() if head is not None else None
        self._fixed = set(fixed.tolist())
        self.statistics = statistics
        self.dynamic = ARC(budget) if budget else None
        self.head = head
        self._dynamic_ids = self._dynamic_head = None
        self.inserted = 0

    def __contains__(self, token: int) -> bool:
        return token in self._fixed or (self.dynamic is not None and token in self.dynamic)

    def __len__(self) -> int:
        return len(self._fixed) + (len(self.dynamic) if self.dynamic is not None else 0)

    def expand(self, seeds: Iterable[int]) -> None:
        """A miss: admit the seeds and their bigram successors (new ones first, capped)."""
        if self.dynamic is None:
            return
        wanted = list(dict.fromkeys(seeds))
        if self.statistics is not None:
            wanted += [f for seed in wanted for f in self.statistics.followers(seed)]
        fresh = [t for t in dict.fromkeys(wanted) if t not in self._fixed][:MAX_INSERTED]
        admitted = sum(self.dynamic.request(token) for token in fresh)
        if admitted:
            self.inserted += admitted
            self._dynamic_ids = None

    def hit(self, token: int) -> None:
        """A drafted token from the dynamic set was accepted: ARC counts it as a second use."""
        if self.dynamic is not None and token in self.dynamic:
            self.dynamic.request(token)

    def argmax(self, hidden: torch.Tensor) -> int:
        """The most likely active token after `hidden` (the draft model's final state)."""
        return self._best(lambda ids, rows: rows @ hidden)

    def argmax_logits(self, logits: torch.Tensor) -> int:
        """The active token with the largest of `logits` (the whole head's)."""
        return self._best(lambda ids, rows: logits[ids])

    def _best(self, scores: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]) -> int:
        """The best-scoring active token: the fixed set's best, unless a dynamic one beats it."""
        values = scores(self.fixed_ids, self.fixed_head)
        best = int(values.argmax())
        token, score = int(self.fixed_ids[best]), float(values[best])
        if self.dynamic is not None and len(self.dynamic):
            if self._dynamic_ids is None:
                ids = torch.tensor(list(self.dynamic), dtype=torch.long, device=self.device)
                self._dynamic_ids = ids
                self._dynamic_head = self.head[ids] if self.head is not None else None
            values = scores(self._dynamic_ids, self._dynamic_head)
            if float(values.max()) > score:
                token = int(self._dynamic_ids[int(values.argmax())])
        return token


class ChainDrafter(ABC):
    """What both engines' draft models share: greedy chains from what the model gives after
    the committed tokens and after each drafted one. Each engine's class catches its cache up,
    takes one step, and chooses a token from what a step gave."""

    def __init__(self) -> None:
        self.synced = 0  # committed tokens at the last catch-up (all of them were fed)
        self.steps = 0  # forward passes of the draft model

    @abstractmethod
    def catch_up(self, tokens: list[int]) -> torch.Tensor:
        """Make the cache hold `tokens`, which extend the tokens of the last catch-up (cropping
        drafts the target rejected), and return what the model gives after the last one."""

    @abstractmethod
    def _step(self, token: int) -> torch.Tensor:
        """Feed one drafted token; what the model gives after it."""

    @abstractmethod
    def _choose(self, scores: torch.Tensor) -> int:
        """The token to draft, given what a step gave."""

    def lag(self, tokens: list[int]) -> int:
        """Committed tokens a draft would first have to read."""
        return len(tokens) - self.synced

    def chain(self, tokens: list[int], length: int) -> list[int]:
        """The draft model's greedy continuation of `tokens`, `length` tokens long."""
        scores = self.catch_up(tokens)
        drafted: list[int] = []
        while True:
            drafted.append(self._choose(scores))
            if len(drafted) == length:
                return drafted
            scores = self._step(drafted[-1])


class DraftModel(ChainDrafter):
    """A transformers causal LM that drafts greedy chains, its DynamicCache in step with the
    committed tokens; its steps give final states, scored by the (sliced) LM head."""

    def __init__(self, model, vocabulary: ActiveVocabulary | None = None) -> None:
        from transformers import DynamicCache  # here: the llama.cpp engine never imports it

        super().__init__()
        self.model = model
        self.decoder = model.get_decoder()
        self.head = model.get_output_embeddings().weight
        self.vocabulary = vocabulary
        self.cache = DynamicCache(config=model.config)
        self.fed: list[int] = []  # the tokens whose keys and values the cache holds

    def _feed(self, tokens: list[int]) -> torch.Tensor:
        """Run the decoder over `tokens` after the cache; the final state of the last one."""
        out = self.decoder(
            input_ids=torch.tensor([tokens], device=self.model.device),
            cache=self.cache,
            use_cache=True,
        )
        self.fed.extend(tokens)
        self.steps += 1
        return out.last_hidden_state[0, -1]

    def _step(self, token: int) -> torch.Tensor:
        return self._feed([token])

    def _choose(self, hidden: torch.Tensor) -> int:
        if self.vocabulary is not None:
            return self.vocabulary.argmax(hidden)
        return int((self.head @ hidden).argmax())

    def catch_up(self, tokens: list[int]) -> torch.Tensor:
        # Committed tokens only grow, so the ones fed by the last catch-up still match.
        limit = min(len(self.fed), len(tokens) - 1)  # the last token is always fed again
        common = min(self.synced, limit)
        while common < limit and self.fed[common] == tokens[common]:
            common += 1
        if common < len(self.fed):
            self.cache.crop(common - len(self.fed))  # a negative count: tokens to drop
            del self.fed[common:]
        self.synced = len(tokens)
        return self._feed(tokens[common:])


class LlamaCppDraftModel(ChainDrafter):
    """A GGUF model (engine/llamacpp.py's GgufModel, its own context) that drafts greedy chains
    through the engine's target contract: the committed tokens are prefilled (the target keeps
    what its cache shares with them and drops the rest, rejected drafts included), and each
    step is a one-node tree verified and kept. Its steps give the whole head's logits."""

    def __init__(self, model, vocabulary: ActiveVocabulary | None = None) -> None:
        super().__init__()
        self.model = model
        self.vocabulary = vocabulary
        self.target: LlamaCppTarget | None = None
        self.fed = 0  # tokens the target's cache holds

    def catch_up(self, tokens: list[int]) -> torch.Tensor:
        needed = len(tokens) + MAX_DRAFT  # and a chain after them
        if self.target is None:  # the model's context, and what it holds, where large enough
            self.target = open_target(self.model, needed)
        elif needed > self.target.capacity:  # a larger context, seldom outgrown again
            self.target = open_target(self.model, 2 * needed)
        self.target.prefill(tokens[:-1], False)
        self.fed = len(tokens) - 1
        self.synced = len(tokens)
        return self._step(tokens[-1])

    def _step(self, token: int) -> torch.Tensor:
        scores = self.target.forward(DraftTree(token), self.fed, False).logits[0]
        logits = torch.from_numpy(scores)  # llama.cpp's NumPy row, as the vocabulary takes it
        self.target.keep(self.fed, [0])
        self.fed += 1
        self.steps += 1
        return logits

    def _choose(self, logits: torch.Tensor) -> int:
        if self.vocabulary is not None:
            return self.vocabulary.argmax_logits(logits)
        return int(logits.argmax())


def draft_model_for(model, vocabulary: ActiveVocabulary | None = None) -> ChainDrafter:
    """The draft model class for `model`'s engine (a GGUF model says it is llama.cpp's)."""
    if getattr(model, "engine", "torch") == "llama.cpp":
        return LlamaCppDraftModel(model, vocabulary)
    return DraftModel(model, vocabulary)
