"""Speculative sampling keeps the model's distribution (a chi-square test on a tiny model)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch
from helpers import tiny_model

from specedit.drafting.kinds import BRANCH
from specedit.engine import verify
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.options import Sampling
from specedit.engine.session import generate
from specedit.engine.tree import DraftTree
from specedit.engine.verify import Acceptance, Verifier, probabilities

VOCAB = 6
PROMPT = [1, 4, 2, 5, 1, 4]


class FixedTreeDrafter(Drafter):
    """Drafts the same two-branch tree at the first step, chains after it."""

    def __init__(self, first: list[int], second: list[int]) -> None:
        self.first, self.second = first, second

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = DraftTree(root=memory.tokens[-1])
        if len(memory) == len(PROMPT):
            for a in self.first:
                tree.add_chain([a, *self.second][:budget], kind=BRANCH)
        else:
            tree.add_chain(self.second[:budget])
        return tree


def _exact(model, sampling: Sampling) -> dict[tuple[int, int], float]:
    """P(first two new tokens) from the model's own conditional distributions."""
    with torch.no_grad():
        first = probabilities(model(torch.tensor([PROMPT])).logits[0, -1], sampling)
        exact = {}
        for a in range(VOCAB):
            second = probabilities(model(torch.tensor([PROMPT + [a]])).logits[0, -1], sampling)
            for b in range(VOCAB):
                exact[a, b] = float(first[a] * second[b])
    return exact


def _chi_square(counts: dict, exact: dict, n: int) -> tuple[float, int]:
    """Chi-square statistic over outcomes, pooling those expected fewer than 5 times."""
    statistic, cells, pooled_seen, pooled_expected = 0.0, 0, 0, 0.0
    for outcome, p in exact.items():
        if p * n < 5:
            pooled_seen += counts.get(outcome, 0)
            pooled_expected += p * n
            continue
        statistic += (counts.get(outcome, 0) - p * n) ** 2 / (p * n)
        cells += 1
    if pooled_expected > 0:
        statistic += (pooled_seen - pooled_expected) ** 2 / pooled_expected
        cells += 1
    return statistic, cells - 1


def _critical(df: int, z: float = 3.29) -> float:
    """Upper chi-square quantile (z = 3.29: p = 0.0005) by the Wilson-Hilferty approximation."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


@pytest.mark.parametrize(
    "sampling",
    [Sampling(temperature=1.0), Sampling(temperature=0.8, top_k=4, top_p=0.9)],
    ids=["plain", "topk-topp"],
)
def test_tree_speculation_keeps_the_sampling_distribution(sampling):
    model = tiny_model(vocab=VOCAB, seed=3, init=0.1, layers=1)
    exact = _exact(model, sampling)
    likely = sorted(range(VOCAB), key=lambda a: -sum(exact[a, b] for b in range(VOCAB)))
    n = 1000
    counts: dict[tuple[int, int], int] = {}
    accepted = 0
    for seed in range(n):
        run = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed=seed)
        result = generate(
            model,
            PROMPT,
            FixedTreeDrafter(likely[:2], likely[:2]),
            max_new_tokens=2,
            sampling=run,
        )
        key = tuple(result.tokens)
        counts[key] = counts.get(key, 0) + 1
        accepted += result.stats.accepted_tokens
    assert accepted > n // 4  # the drafts were really used
    statistic, df = _chi_square(counts, exact, n)
    assert statistic < _critical(df), (statistic, df)
    # The test has power: the same counts are far from a distribution at another temperature.
    other = Sampling(sampling.temperature * 0.5, sampling.top_k, sampling.top_p)
    wrong_statistic, wrong_df = _chi_square(counts, _exact(model, other), n)
    assert wrong_statistic > _critical(wrong_df), (wrong_statistic, wrong_df)
    assert df >= 8


def test_same_seed_gives_same_sample_with_and_without_drafts():
    """Not required for correctness, but a seed must make one method's output reproducible."""
    model = tiny_model(vocab=VOCAB, seed=3)
    runs = [
        generate(
            model,
            PROMPT,
            FixedTreeDrafter([1, 2], [3]),
            max_new_tokens=8,
            sampling=Sampling(temperature=1.0, seed=42),
        ).tokens
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_probabilities_follow_top_k_and_top_p():
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    top_k = probabilities(logits, Sampling(temperature=1.0, top_k=2))
    assert (top_k[2:] == 0).all() and math.isclose(float(top_k.sum()), 1.0, rel_tol=1e-6)
    full = logits.softmax(-1)
    top_p = probabilities(logits, Sampling(temperature=1.0, top_p=float(full[0]) + 1e-3))
    assert (top_p > 0).tolist() == [True, True, False, False, False]


# Drafts two and three levels deep. The joint distribution of the first DEPTH tokens must be the
# model's own, whichever drafted paths the walk descends.

DEPTH = 3


def _conditionals(model, sampling: Sampling) -> dict[tuple[int, ...], np.ndarray]:
    """p(. | PROMPT + q), as plain sampling draws it, for every q of fewer than DEPTH tokens."""
    out: dict[tuple[int, ...], np.ndarray] = {}
    with torch.no_grad():
        for length in range(DEPTH):
            for q in itertools.product(range(VOCAB), repeat=length):
                logits = model(torch.tensor([PROMPT + list(q)])).logits[0, -1]
                out[q] = probabilities(logits, sampling)
    return out


def _joint(conditionals: dict[tuple[int, ...], np.ndarray]) -> dict[tuple[int, ...], float]:
    """P(first DEPTH new tokens = q) under plain sampling: the product of the conditionals."""
    return {
        q: math.prod(float(conditionals[q[:i]][q[i]]) for i in range(DEPTH))
        for q in itertools.product(range(VOCAB), repeat=DEPTH)
    }


class LikelyTreeDrafter(Drafter):
    """Drafts, below the tokens generated so far, the model's most likely continuations down to
    DEPTH new tokens: `widths[level]` children per node, least likely first (so the first child
    is not the model's favourite), and at the top a `wrong` branch first, the token the model
    finds least likely, with a chain below it."""

    def __init__(self, likely: dict, widths: tuple[int, ...], wrong: bool) -> None:
        self.likely, self.widths, self.wrong = likely, widths, wrong

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = DraftTree(root=memory.tokens[-1])
        done = tuple(memory.tokens[len(PROMPT) :])
        if self.wrong and len(done) < DEPTH:
            below = tree.add(self.likely[done][-1], 0, kind=BRANCH)
            for level in range(len(done) + 1, DEPTH):
                below = tree.add(self.likely[done][level % 2], below, kind=BRANCH)
        self._grow(tree, 0, done, 0)
        assert len(tree) - 1 <= budget
        return tree

    def _grow(self, tree: DraftTree, node: int, q: tuple[int, ...], level: int) -> None:
        if len(q) >= DEPTH or level >= len(self.widths):
            return
        for token in reversed(self.likely[q][: self.widths[level]]):
            self._grow(tree, tree.add(token, node), (*q, token), level + 1)


def _first_child_below(depth: int):
    """A biased walk for the power checks: exact down to `depth`, then it always accepts the
    first drafted child, as a careless tree walk might."""

    def walk(self: Verifier, tree: DraftTree, logits: torch.Tensor) -> Acceptance:
        children, depths = tree.children(), tree.depths()
        node, path = 0, []
        while True:
            if depths[node] >= depth and children[node]:
                node = children[node][0]
                path.append(node)
                continue
            token = self.choose(logits[node])
            child = next((c for c in children[node] if tree.token(c) == token), None)
            if child is None:
                return Acceptance(path, token, [False] * len(path))
            path.append(child)
            node = child

    return walk


def _sample_prefixes(model, drafter: Drafter, sampling: Sampling, n: int):
    """Counts of the first DEPTH tokens over n seeded runs, and for each k the number of runs
    that accepted a drafted path at least k deep in one pass."""
    counts: Counter[tuple[int, ...]] = Counter()
    deepest: Counter[int] = Counter()
    for seed in range(n):
        seen: list[int] = []
        result = generate(
            model,
            PROMPT,
            drafter,
            max_new_tokens=64,  # the stop below ends it; the budget leaves room for every tree
            sampling=replace(sampling, seed=seed),
            stop=lambda token, seen=seen: seen.append(token) or len(seen) >= DEPTH,
        )
        assert len(result.tokens) == DEPTH
        counts[tuple(result.tokens)] += 1
        deepest.update(range(1, max(result.stats.accepted_lengths) + 1))
    return counts, deepest


@pytest.mark.parametrize(
    "widths,wrong,sampling,biased_below",
    [
        ((1, 1, 1), False, Sampling(temperature=1.0), 2),
        ((3, 2, 1), True, Sampling(temperature=1.0), 1),
        ((2, 2, 2), True, Sampling(temperature=0.8, top_k=4, top_p=0.9), 2),
    ],
    ids=["chain", "tree", "tree-topk-topp"],
)
def test_deep_drafts_keep_the_joint_sampling_distribution(
    monkeypatch, widths, wrong, sampling, biased_below
):
    model = tiny_model(vocab=VOCAB, seed=1, init=0.15, layers=1)
    conditionals = _conditionals(model, sampling)
    likely = {q: np.argsort(-p, kind="stable").tolist() for q, p in conditionals.items()}
    exact = _joint(conditionals)
    drafter = LikelyTreeDrafter(likely, widths, wrong)
    n = 400
    counts, deepest = _sample_prefixes(model, drafter, sampling, n)
    assert deepest[2] > n // 10 and deepest[3] > n // 40  # the walk really went deep
    statistic, df = _chi_square(counts, exact, n)
    assert df >= 15
    assert statistic < _critical(df), (statistic, df)
    # The check has power where it matters: a walk that is exact down to `biased_below` and
    # then always takes the first drafted child (a careless walk) fails the same check.
    monkeypatch.setattr(Verifier, "_strict", _first_child_below(biased_below))
    biased, _ = _sample_prefixes(model, drafter, sampling, n)
    biased_statistic, biased_df = _chi_square(biased, exact, n)
    assert biased_statistic > _critical(biased_df), (biased_statistic, biased_df)


def test_the_nucleus_found_among_the_likeliest_tokens_is_the_one_the_whole_sort_gives():
    """Top-p looks for its nucleus among the likeliest tokens first; where they tell, it is
    the nucleus a sort of the whole vocabulary gives, ties ordered by index; where a tie crosses
    their edge or they hold too little, they do not tell and the whole sort decides."""
    rng = np.random.default_rng(0)
    told = 0
    for trial in range(200):
        logits = (rng.standard_normal(4000) * rng.uniform(1, 12)).astype(np.float32)
        if trial % 3 == 0:
            logits = np.round(logits)  # many ties
        if trial % 5 == 0:
            logits[rng.integers(4000)] += 30  # one token holds nearly all the mass
        top_p = float(rng.uniform(0.5, 0.999))
        found = verify._outside_likeliest(logits, top_p)
        if found is not None:
            told += 1
            assert (found == verify._outside_nucleus(logits, top_p)).all(), trial
    assert told > 150  # mostly they tell
    tied = np.zeros(4000, dtype=np.float32)  # every token alike: the likeliest cannot tell
    assert verify._outside_likeliest(tied, 0.5) is None
    kept = ~verify._outside_nucleus(tied, 0.5)
    assert 1990 < kept.sum() < 2010 and kept[: kept.sum()].all()  # half of them, first by index
