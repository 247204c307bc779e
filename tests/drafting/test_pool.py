"""The draft pool: suffix array lookups against brute force, frequency trees, sources, exactness."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from helpers import greedy_reference, repeating_prompt

from specedit.drafting.copying.pool import DraftPool, PoolDrafter, PoolLimits, suffix_array
from specedit.drafting.kinds import POOL
from specedit.engine.memory import Memory
from specedit.engine.session import generate
from specedit.engine.tree import DraftTree


def _paths(tree: DraftTree) -> list[tuple[int, ...]]:
    """The token path from the root's child down to each node, in node order."""
    paths: list[tuple[int, ...]] = [()]
    for token, parent in zip(tree.tokens, tree.parents):
        paths.append((*paths[parent], token))
    return paths[1:]


def _occurrences(documents: list[list[int]], gram: list[int]) -> list[tuple[int, int]]:
    """(document, offset after the gram) of every occurrence, by brute force."""
    n = len(gram)
    return [
        (d, i + n)
        for d, doc in enumerate(documents)
        for i in range(len(doc) - n + 1)
        if doc[i : i + n] == gram
    ]


def _random_documents(rng: random.Random, vocab: int) -> list[list[int]]:
    return [[rng.randrange(vocab) for _ in range(rng.randrange(1, 80))] for _ in range(3)]


def test_suffix_array_sorts_suffixes_by_their_first_depth_tokens():
    rng = random.Random(0)
    seq = [rng.randrange(3) for _ in range(500)]
    for depth in (1, 3, 5):
        order = suffix_array(np.array(seq), depth).tolist()
        assert sorted(order) == list(range(len(seq)))
        heads = [seq[p : p + depth] for p in order]
        assert heads == sorted(heads)
    exact = sorted(range(len(seq)), key=lambda p: (seq[p : p + 8], p))  # 8: a power of two
    assert suffix_array(np.array(seq), 8).tolist() == exact


@pytest.mark.parametrize("seed", range(4))
def test_search_finds_the_longest_suffix_and_all_its_occurrences(seed):
    rng = random.Random(seed)
    documents = _random_documents(rng, vocab=3)
    pool = DraftPool(documents, max_ngram=8)
    for _ in range(40):
        context = [rng.randrange(4) for _ in range(rng.randrange(1, 12))]  # 3 never occurs
        best = next(
            (
                n
                for n in range(min(8, len(context)), 1, -1)
                if _occurrences(documents, context[-n:])
            ),
            0,
        )
        found = pool.search(context, min_ngram=2, max_matches=10_000, depth=4)
        assert found.n == best
        expected = _occurrences(documents, context[-best:]) if best else []
        assert found.count == len(expected)
        assert sorted(zip(found.documents.tolist(), found.offsets.tolist())) == expected
        for doc, offset, row in zip(found.documents, found.offsets, found.rows.tolist()):
            following = documents[doc][offset : offset + 4]
            assert row == following + [-1] * (4 - len(following))  # never crosses documents


def test_the_longest_match_wins_over_more_frequent_shorter_ones():
    documents = [[1, 2, 3, 10, 11], [2, 3, 20, 21], [2, 3, 20, 21], [2, 3, 20, 21]]
    drafter = PoolDrafter(documents)
    long_match = drafter.propose(Memory([50, 1, 2, 3]), 64)
    assert _paths(long_match) == [(10,), (10, 11)]
    short_match = drafter.propose(Memory([50, 9, 2, 3]), 64)
    assert _paths(short_match)[:2] == [(20,), (20, 21)]
    assert {path[0] for path in _paths(short_match)} == {10, 20}


def test_the_tree_holds_the_most_frequent_continuations_first_within_its_limits():
    documents = [[7, 8, 9, 1]] * 3 + [[7, 8, 5, 1]] * 2 + [[7, 8, 4, 1]]
    memory = Memory([30, 7, 8])
    full = PoolDrafter(documents).propose(memory, 64)
    assert _paths(full) == [(9,), (9, 1), (5,), (5, 1), (4,), (4, 1)]
    assert set(full.kinds) == {POOL}
    three = PoolDrafter(documents, limits=PoolLimits(max_nodes=3))
    assert _paths(three.propose(memory, 64)) == [(9,), (9, 1), (5,)]
    assert _paths(PoolDrafter(documents).propose(memory, 2)) == [(9,), (9, 1)]
    assert len(PoolDrafter(documents).propose(memory, 0)) == 1


@pytest.mark.parametrize("seed", range(4))
def test_the_tree_is_the_heaviest_prefixes_and_parents_come_first(seed):
    rng = random.Random(seed)
    documents = _random_documents(rng, vocab=3)
    limits = PoolLimits(max_nodes=10, max_depth=5, max_matches=10_000)
    drafter = PoolDrafter(documents, limits=limits)
    for _ in range(20):
        context = [rng.randrange(3) for _ in range(rng.randrange(2, 30))]
        # the context before its last token is searched too, with continuations into the rest
        searched = [*documents, context[:-1]]
        following = [*documents, context]
        best = next(
            (
                n
                for n in range(min(16, len(context)), 1, -1)
                if _occurrences(searched, context[-n:])
            ),
            0,
        )
        counts = Counter(
            tuple(following[d][o : o + k])
            for d, o in (_occurrences(searched, context[-best:]) if best else [])
            for k in range(1, 6)
            if o + k <= len(following[d])
        )
        tree = drafter.propose(Memory(context), 64)
        paths = _paths(tree)
        assert all(parent < node for node, parent in enumerate(tree.parents, start=1))
        assert len(set(paths)) == len(paths) == min(10, len(counts))
        assert all(path in counts for path in paths)
        left_out = [count for path, count in counts.items() if path not in set(paths)]
        assert min((counts[p] for p in paths), default=0) >= max(left_out, default=0)


def test_input_sources_point_into_memory_and_references_have_none():
    header, text, footer = [1, 2], [40, 41, 42, 43, 44, 45], [3, 4]
    reference = [60, 41, 42, 99, 98]
    prompt = header + text + footer
    memory = Memory(prompt)
    memory.extend([5, 41, 42])  # the output so far ends in a phrase of both documents
    drafter = PoolDrafter([text, reference], input_offset=len(header))
    tree = drafter.propose(memory, 64)
    assert set(_paths(tree)) == {(43,), (43, 44), (43, 44, 45), (99,), (99, 98)}
    for token, source, path in zip(tree.tokens, tree.sources, _paths(tree)):
        if path[0] == 43:
            assert source is not None and memory.tokens[source] == token
        else:
            assert source is None


def test_the_output_is_searched_and_the_input_is_not_counted_twice():
    text = [1, 2, 3, 70, 1, 2, 3, 71]  # [1, 2] -> 3 twice in the input
    reference = [1, 2, 4, 80, 1, 2, 4, 81, 1, 2, 4, 82]  # [1, 2] -> 4 three times
    memory = Memory([9, *text, 9])
    memory.extend([1, 2])
    tree = PoolDrafter([text, reference], input_offset=1).propose(memory, 64)
    assert tree.tokens[0] == 4  # 3 would weigh 4 if the input's copy in memory counted too

    memory = Memory([9, *text, 9])
    memory.extend([50, 51, 52, 53, 50, 51])  # only the output holds [50, 51]
    tree = PoolDrafter([text, reference], input_offset=1).propose(memory, 64)
    assert _paths(tree) == [(52,), (52, 53), (52, 53, 50), (52, 53, 50, 51)]
    assert tree.sources == [12, 13, 14, 15]
    assert all(memory.tokens[s] == t for s, t in zip(tree.sources, tree.tokens))


@pytest.mark.parametrize("in_pool,first", [(6, 3), (3, 4)])
def test_sampled_matches_weigh_for_all_the_occurrences_they_stand_for(in_pool, first):
    memory = Memory([9])
    for i in range(4):  # [1, 2] -> 4 four times in the output, after different tokens
        memory.extend([10 + i, 1, 2, 4])
    memory.extend([99, 1, 2])
    # [1, 2] -> 3 in_pool times
    drafter = PoolDrafter([[1, 2, 3]] * in_pool, limits=PoolLimits(max_matches=2))
    assert drafter.propose(memory, 64).tokens[0] == first
    sampled = drafter.pool.search([99, 1, 2], max_matches=2)
    assert (sampled.n, sampled.count, len(sampled.rows)) == (2, in_pool, 2)


def test_no_match_drafts_nothing():
    drafter = PoolDrafter([[1, 2, 3, 4], [5, 6, 7]], input_offset=0)
    assert len(drafter.propose(Memory([1, 2, 3, 4, 9, 8]), 64)) == 1
    assert len(drafter.propose(Memory([1, 2, 3, 4, 9, 2]), 64)) == 1  # one token is too short
    assert len(PoolDrafter([]).propose(Memory([1, 2]), 64)) == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_output_equals_generate(qwen_tiny, seed):
    prompt = repeating_prompt(seed)
    reference = greedy_reference(qwen_tiny, prompt, 48)
    text = prompt[2:-3]  # the "input" inside the prompt
    drafter = PoolDrafter([text, prompt[-8:] + reference[:30], [5, 6, 7] * 20], input_offset=2)
    steps = []
    result = generate(qwen_tiny, prompt, drafter, max_new_tokens=48, on_step=steps.append)
    assert result.tokens == reference
    assert result.stop_reason == "length"
    assert result.stats.accepted_tokens >= 25  # the reference's true continuation was drafted
    memory = prompt + result.tokens
    copied = [(t, s) for step in steps for t, s in zip(step.tokens, step.sources) if s is not None]
    assert all(memory[source] == token for token, source in copied)
