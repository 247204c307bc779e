"""Speculative sampling keeps the model's distribution (a chi-square test on a tiny model)."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import tiny_model

from specedit.drafting.kinds import BRANCH
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.session import generate
from specedit.engine.tree import DraftTree
from specedit.engine.verify import Sampling, probabilities

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
    model = tiny_model(vocab=VOCAB, seed=3, init=0.1)
    exact = _exact(model, sampling)
    likely = sorted(range(VOCAB), key=lambda a: -sum(exact[a, b] for b in range(VOCAB)))
    n = 1500
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
