"""Decide which drafted path the model accepts.

Strict (the default, exact): drafts are deterministic copies (their draft distribution is
one-hot), so exact speculative sampling needs no draft probabilities: at a node, draw y from the
model's distribution; if y is a child, descend into it, else y is the model's own token and the
step ends. Greedy is the same walk with y = argmax. Both give exactly the tokens (or the
distribution) of plain decoding.

Conditional (CASD, lossy on purpose): a drafted token x is also accepted when the model finds it
plausible enough, p(x) > max(delta, p(eos)), and in "mixed" mode only if x is also among the
model's top-k. The longest accepted path wins; the token after it is the model's own. Tokens the
model would not have chosen itself are "relaxed" acceptances, reported so they can be shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from specedit.engine.arrays import as_numpy, softmax
from specedit.engine.options import STRICT, Sampling, Verification
from specedit.engine.tree import DraftTree

if TYPE_CHECKING:
    import torch


# A nucleus mostly holds a few tokens: it is looked for among this many likeliest first, and in
# the whole vocabulary (a sort of all of it, most of a sampled token's cost) only where they
# hold less than top_p or a tie crosses their edge.
NUCLEUS_SEARCH = 256


def probabilities(logits: np.ndarray | torch.Tensor, sampling: Sampling) -> np.ndarray:
    """The distribution plain sampling draws from: temperature, then top-k, then top-p."""
    logits = as_numpy(logits) / sampling.temperature
    if sampling.top_k:
        k = min(sampling.top_k, logits.shape[-1])
        kth = np.partition(logits, -k, axis=-1)[..., -k, None]
        logits = np.where(logits < kth, -np.inf, logits)
    if sampling.top_p < 1:
        drop = _outside_likeliest(logits, sampling.top_p)
        if drop is None:
            drop = _outside_nucleus(logits, sampling.top_p)
        logits = np.where(drop, -np.inf, logits)
    return softmax(logits)


def _outside_nucleus(logits: np.ndarray, top_p: float) -> np.ndarray:
    """Where a token lies outside the nucleus: the tokens before it (by score, ties by index)
    already hold top_p of the mass."""
    order = np.argsort(-logits, axis=-1, kind="stable")
    chances = softmax(np.take_along_axis(logits, order, axis=-1))
    drop_sorted = (chances.cumsum(axis=-1) - chances) >= top_p
    drop = np.empty_like(drop_sorted)
    np.put_along_axis(drop, order, drop_sorted, axis=-1)
    return drop


def _outside_likeliest(logits: np.ndarray, top_p: float) -> np.ndarray | None:
    """`_outside_nucleus` of one row, found among its NUCLEUS_SEARCH likeliest tokens; None
    where they cannot tell (they hold less than top_p, or the nucleus ends on a score that
    tokens outside them may share, whose order among them is by index)."""
    if logits.ndim != 1 or logits.shape[0] <= NUCLEUS_SEARCH:
        return None
    likeliest = np.argpartition(-logits, NUCLEUS_SEARCH - 1)[:NUCLEUS_SEARCH]
    scores = logits[likeliest]
    order = np.lexsort((likeliest, -scores))  # by score, ties by index, as the sort of all
    likeliest, scores = likeliest[order], scores[order]
    top = scores[0]  # the row's highest
    chances = np.exp(scores - top) / np.exp(logits - top).sum()
    outside = (chances.cumsum() - chances) >= top_p
    if not outside.any() or scores[outside.argmax()] == scores[-1]:
        return None
    drop = np.ones(logits.shape, dtype=bool)
    drop[likeliest[~outside]] = False
    return drop


@dataclass
class Acceptance:
    """The outcome of one verify pass."""

    path: list[int]  # accepted tree nodes, root excluded, in order
    next_token: int  # the model's own token after the path
    relaxed: list[bool] = field(default_factory=list)  # per path node: not the model's choice


class Verifier:
    """Walks a draft tree with the model's choices (greedy or sampled). Logits come as the
    engine made them (a NumPy array or a tensor); greedy choices are read where they are, and
    the rows a sampled or conditional walk needs are computed on in NumPy."""

    def __init__(self, sampling: Sampling, verification: Verification = STRICT) -> None:
        self.sampling, self.verification = sampling, verification
        self.generator = np.random.default_rng(sampling.seed)  # None: a fresh seed

    def choose(self, logits: np.ndarray | torch.Tensor) -> int:
        """The model's token for one position's logits."""
        if self.sampling.greedy:
            return int(logits.argmax())
        probs = probabilities(logits, self.sampling).astype(np.float64)
        return int(self.generator.choice(len(probs), p=probs / probs.sum()))

    def walk(self, tree: DraftTree, logits: np.ndarray | torch.Tensor, eos: set[int]) -> Acceptance:
        """Accept a path of the tree: strictly, or conditionally (see the module docstring)."""
        if self.verification.mode == "strict" or len(tree) == 1:
            return self._strict(tree, logits)
        return self._conditional(tree, logits, eos)

    def _conditional(
        self, tree: DraftTree, logits: np.ndarray | torch.Tensor, eos: set[int]
    ) -> Acceptance:
        """The deepest node whose every ancestor edge passes the CASD condition."""
        rule = self.verification
        probs = softmax(as_numpy(logits))
        own = probs.argmax(-1).tolist()
        eos_ids = sorted(eos)
        p_eos = probs[:, eos_ids].max(-1) if eos_ids else np.zeros(len(tree))
        floor = np.maximum(p_eos, rule.delta).tolist()  # max(delta, p(eos)) at each node
        if rule.mode == "mixed":
            k = min(rule.top_k, probs.shape[-1])
            top = np.argpartition(-probs, k - 1, axis=-1)[:, :k].tolist()
        else:
            top = None
        depth = tree.depths()
        accepted = [True] + [False] * (len(tree) - 1)
        best = 0
        for node in range(1, len(tree)):
            parent, token = tree.parent(node), tree.token(node)
            if not accepted[parent]:
                continue
            plausible = float(probs[parent, token]) > floor[parent]
            if plausible and top is not None:
                plausible = token in top[parent]
            accepted[node] = token == own[parent] or plausible
            if accepted[node] and depth[node] > depth[best]:
                best = node
        path = []
        node = best
        while node > 0:
            path.append(node)
            node = tree.parent(node)
        path.reverse()
        relaxed = [tree.token(n) != own[tree.parent(n)] for n in path]
        return Acceptance(path, self.choose(logits[best]), relaxed)

    def _strict(self, tree: DraftTree, logits: np.ndarray | torch.Tensor) -> Acceptance:
        """Descend from the root while the model's token is a drafted child."""
        children = tree.children()
        greedy = logits.argmax(-1).tolist() if self.sampling.greedy else None
        node, path = 0, []
        while True:
            token = greedy[node] if greedy is not None else self.choose(logits[node])
            child = next((c for c in children[node] if tree.token(c) == token), None)
            if child is None:
                return Acceptance(path, token, [False] * len(path))
            path.append(child)
            node = child
