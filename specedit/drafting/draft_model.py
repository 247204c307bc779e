"""A small draft model with its own KV cache and, optionally, a dynamic vocabulary (EvoSpec).

The draft model shares the target's tokenizer and runs beside it: before each draft it catches
its cache up with the committed tokens (dropping its own rejected drafts), then proposes a greedy
chain. Its LM head can be restricted to an active vocabulary, because on a small model the head
is a large share of each step (151k x 896 of the 0.5B's ~494M parameters):

- a static core: the most frequent tokens of the standard library's sources;
- the document's own tokens (the prompt holds the input);
- a dynamic set of at most `budget` tokens kept by ARC, filled when a committed token fell
  outside the active vocabulary: the target's top tokens at that position (its LM-head HNSW
  index), the missed token's embedding neighbours, and the bigram successors of all of them.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from transformers import DynamicCache

from specedit.drafting.arc import ARC
from specedit.drafting.cooccurrence import TokenStatistics

MAX_INSERTED = 32  # tokens one miss may add (the paper's cap per failure event)


class ActiveVocabulary:
    """The tokens a draft model may propose, and its LM head sliced to them."""

    def __init__(
        self,
        head: torch.Tensor,
        core: np.ndarray,
        document: Iterable[int],
        statistics: TokenStatistics | None,
        budget: int,
    ) -> None:
        fixed = np.union1d(core, np.fromiter(document, dtype=np.int64))
        fixed = fixed[fixed < head.shape[0]]
        self.fixed_ids = torch.from_numpy(fixed).to(head.device)
        self.fixed_head = head[self.fixed_ids].contiguous()
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
        scores = self.fixed_head @ hidden
        best = int(scores.argmax())
        token, score = int(self.fixed_ids[best]), float(scores[best])
        if self.dynamic is not None and len(self.dynamic):
            if self._dynamic_ids is None:
                ids = torch.tensor(list(self.dynamic), dtype=torch.long, device=self.head.device)
                self._dynamic_ids, self._dynamic_head = ids, self.head[ids]
            dynamic = self._dynamic_head @ hidden
            if float(dynamic.max()) > score:
                token = int(self._dynamic_ids[int(dynamic.argmax())])
        return token


class DraftModel:
    """A causal LM that drafts greedy chains, its KV cache in step with the committed tokens."""

    def __init__(self, model, vocabulary: ActiveVocabulary | None = None) -> None:
        self.model = model
        self.decoder = model.get_decoder()
        self.head = model.get_output_embeddings().weight
        self.vocabulary = vocabulary
        self.cache = DynamicCache(config=model.config)
        self.fed: list[int] = []  # the tokens whose keys and values the cache holds
        self.synced = 0  # committed tokens at the last catch-up (all of them were fed)
        self.steps = 0  # forward passes of the draft model

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

    def _choose(self, hidden: torch.Tensor) -> int:
        if self.vocabulary is not None:
            return self.vocabulary.argmax(hidden)
        return int((self.head @ hidden).argmax())

    def catch_up(self, tokens: list[int]) -> torch.Tensor:
        """Make the cache hold `tokens`, which extend the tokens of the last catch-up (cropping
        drafts the target rejected), and return the state after the last one."""
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

    def lag(self, tokens: list[int]) -> int:
        """Committed tokens a draft would first have to read."""
        return len(tokens) - self.synced

    def chain(self, tokens: list[int], length: int) -> list[int]:
        """The draft model's greedy continuation of `tokens`, `length` tokens long."""
        hidden = self.catch_up(tokens)
        drafted: list[int] = []
        while True:
            drafted.append(self._choose(hidden))
            if len(drafted) == length:
                return drafted
            hidden = self._feed(drafted[-1:])
