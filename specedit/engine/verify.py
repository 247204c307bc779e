"""Decide which drafted path the model accepts.

Drafts are deterministic copies (their draft distribution is one-hot), so exact speculative
sampling needs no draft probabilities: at a node, draw y from the model's distribution; if y is a
child, descend into it, else y is the model's own token and the step ends. Greedy is the same
walk with y = argmax. Both give exactly the tokens (or distribution) of plain decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specedit.engine.tree import DraftTree


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen; temperature 0 means greedy."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ValueError("need temperature >= 0, top_k >= 0 and 0 < top_p <= 1")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


GREEDY = Sampling()


def probabilities(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The distribution plain sampling draws from: temperature, then top-k, then top-p."""
    logits = logits.float() / sampling.temperature
    if sampling.top_k:
        kth = torch.topk(logits, min(sampling.top_k, logits.shape[-1])).values[..., -1, None]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if sampling.top_p < 1:
        sorted_logits, order = torch.sort(logits, descending=True)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        # drop a token when the tokens before it already hold top_p of the mass
        drop = (cumulative - sorted_logits.softmax(-1)) >= sampling.top_p
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits.softmax(-1)


@dataclass
class Acceptance:
    """The outcome of one verify pass."""

    path: list[int]  # accepted tree nodes, root excluded, in order
    next_token: int  # the model's own token after the path


class Verifier:
    """Walks a draft tree with the model's choices (greedy or sampled)."""

    def __init__(self, sampling: Sampling) -> None:
        self.sampling = sampling
        self.generator = torch.Generator()
        if sampling.seed is not None:
            self.generator.manual_seed(sampling.seed)
        else:
            self.generator.seed()

    def choose(self, logits: torch.Tensor) -> int:
        """The model's token for one position's logits."""
        if self.sampling.greedy:
            return int(logits.argmax())
        probs = probabilities(logits, self.sampling)
        return int(torch.multinomial(probs.cpu(), 1, generator=self.generator))

    def walk(self, tree: DraftTree, logits: torch.Tensor) -> Acceptance:
        """Descend from the root while the model's token is a drafted child."""
        children = tree.children()
        greedy = logits.argmax(-1).tolist() if self.sampling.greedy else None
        node, path = 0, []
        while True:
            token = greedy[node] if greedy is not None else self.choose(logits[node])
            child = next((c for c in children[node] if tree.token(c) == token), None)
            if child is None:
                return Acceptance(path, token)
            path.append(child)
            node = child
