"""Draft pool (REST, as CASD uses it): continuations of the longest matching suffix of the
context, retrieved from an index over the input and reference files and drafted as a tree of
their most frequent prefixes.

References only need to be in the pool, never in the prompt, so the pool can be far larger than
the model's context: a suffix array keeps each lookup at O(n log N) whatever its size.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specedit.drafting.kinds import POOL
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree

SEPARATOR = -1  # joins documents (and pads rows); no query holds it, so no match spans two


def suffix_array(seq: np.ndarray, depth: int) -> np.ndarray:
    """Start positions of `seq`'s suffixes sorted by their first k >= `depth` tokens (k is the
    next power of two), ties by position.

    Prefix doubling: each round sorts by (rank of the first k tokens, rank of the next k), so
    ceil(log2(depth)) sorts of N keys. Lookups of n-grams with n <= depth need no deeper order,
    which keeps a 1M-token build at a few sorts however long the repeats in it are.
    """
    size = len(seq)
    rank = np.unique(seq, return_inverse=True)[1].astype(np.int64) + 1  # 0 = past the end
    order = np.argsort(rank, kind="stable")
    k = 1
    while k < depth and size:
        following = np.zeros(size, np.int64)
        following[: size - k] = rank[k:]
        key = rank * (size + 2) + following
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        rank = np.empty(size, np.int64)
        rank[order] = np.cumsum(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        k *= 2
    return order


@dataclass
class Matches:
    """Occurrences of the context's longest matching suffix and what follows each of them."""

    n: int  # length of the matched suffix; 0 = no match
    count: int  # occurrences in the pool (rows holds an even sample of at most max_matches)
    documents: np.ndarray  # document of each sampled occurrence
    offsets: np.ndarray  # offset in that document of the continuation's first token
    rows: np.ndarray  # continuations, one row each, padded with SEPARATOR


class DraftPool:
    """A suffix array over documents joined by SEPARATOR, built once per run.

    `max_ngram` is the longest query it can answer: suffixes are only sorted that deep.
    """

    def __init__(self, documents: Sequence[Sequence[int]], max_ngram: int = 16) -> None:
        pieces: list[np.ndarray] = []
        self.starts = np.zeros(len(documents), np.int64)  # where each document begins
        offset = 0
        for index, document in enumerate(documents):
            array = np.asarray(document, dtype=np.int64).reshape(-1)
            if array.size and array.min() < 0:
                raise ValueError("token ids must be non-negative")
            self.starts[index], offset = offset, offset + len(array) + 1
            pieces += [array, np.array([SEPARATOR])]
        self.seq = np.concatenate(pieces[:-1]) if pieces else np.zeros(0, np.int64)
        self.max_ngram = max_ngram
        self.suffixes = suffix_array(self.seq, max_ngram)
        self._list = self.seq.tolist()  # list slices compare far faster than array slices

    def __len__(self) -> int:
        """Tokens indexed, separators excluded."""
        return len(self.seq) - max(len(self.starts) - 1, 0)

    def find(self, query: Sequence[int]) -> tuple[int, int]:
        """The range [lo, hi) of the suffix array whose suffixes start with `query`."""
        if not 0 < len(query) <= self.max_ngram:
            raise ValueError(f"queries hold 1 to {self.max_ngram} tokens")
        query, seq, n = list(query), self._list, len(query)
        lo = bisect.bisect_left(self.suffixes, query, key=lambda p: seq[p : p + n])
        hi = bisect.bisect_right(self.suffixes, query, lo=lo, key=lambda p: seq[p : p + n])
        return lo, hi

    def search(
        self, context: Sequence[int], min_ngram: int = 2, max_matches: int = 256, depth: int = 32
    ) -> Matches:
        """Occurrences of the longest suffix of `context` (at most max_ngram, at least min_ngram
        tokens) that occurs in the pool, with up to `depth` tokens after each.

        A suffix that occurs implies its own suffixes occur, so a binary search over n finds the
        longest in about four lookups. A frequent n-gram is sampled evenly across its range:
        the range is sorted by the continuations, so the sample keeps their proportions.
        """
        best, span = 0, (0, 0)
        lo, hi = min_ngram - 1, min(self.max_ngram, len(context))
        while lo < hi:
            n = (lo + hi + 1) // 2
            found = self.find(context[len(context) - n :])
            if found[0] < found[1]:
                best, span, lo = n, found, n
            else:
                hi = n - 1
        first, end = span
        positions = self.suffixes[first + evenly(end - first, max_matches)] + best
        columns = positions[:, None] + np.arange(depth)
        rows = np.take(self.seq, columns, mode="clip")
        rows[columns >= len(self.seq)] = SEPARATOR
        rows[~np.logical_and.accumulate(rows != SEPARATOR, axis=1)] = SEPARATOR
        documents = np.searchsorted(self.starts, positions, side="right") - 1
        return Matches(best, end - first, documents, positions - self.starts[documents], rows)


def evenly(count: int, limit: int) -> np.ndarray:
    """Indices of at most `limit` items spread evenly over `count`."""
    if count <= limit:
        return np.arange(count)
    return np.linspace(0, count - 1, limit).round().astype(np.int64)


def prefix_tree(
    root: int, rows: np.ndarray, firsts: np.ndarray, weights: np.ndarray, limit: int
) -> DraftTree:
    """A tree of the `limit` heaviest prefixes of `rows` (continuations padded with SEPARATOR).

    This is REST's trie pruned to its most frequent nodes, computed with sorts rather than a
    Python trie so that hundreds of continuations cost well under a millisecond. `firsts` holds
    each row's memory position (-1 = none), `weights` how many occurrences it stands for. A
    prefix weighs at least as much as its extensions, so ordering nodes by (weight desc, depth
    asc) puts parents before children and every head of that order is a tree.
    """
    tree = DraftTree(root=root)
    if limit <= 0 or rows.shape[0] == 0 or rows.shape[1] == 0:
        return tree
    order = np.lexsort(rows.T[::-1])
    rows, firsts, weights = rows[order], firsts[order], weights[order]
    count, depth = rows.shape
    differs = rows[1:] != rows[:-1]
    first_difference = np.where(differs.any(axis=1), differs.argmax(axis=1), depth)
    opens = np.ones((depth, count), bool)  # opens[d, r]: row r's prefix of length d + 1 is new
    opens[:, 1:] = first_difference <= np.arange(depth)[:, None]
    node_of = np.cumsum(opens.ravel()).reshape(depth, count) - 1  # node holding each (d, r)
    flat = np.flatnonzero(opens)  # groups are contiguous in row-major order
    levels, starts = np.divmod(flat, count)
    tokens = rows[starts, levels]
    weight = np.add.reduceat(np.broadcast_to(weights, (depth, count)).ravel(), flat)
    source = np.maximum.reduceat(np.broadcast_to(firsts, (depth, count)).ravel(), flat)
    parents = np.where(levels > 0, node_of[np.maximum(levels - 1, 0), starts], -1)
    valid = np.flatnonzero(tokens != SEPARATOR)
    chosen = valid[np.lexsort((levels[valid], -weight[valid]))[:limit]]
    index = {-1: 0}  # node -> tree index
    for node, token, parent, first, level in zip(
        chosen.tolist(),
        tokens[chosen].tolist(),
        parents[chosen].tolist(),
        source[chosen].tolist(),
        levels[chosen].tolist(),
    ):
        index[node] = tree.add(token, index[parent], first + level if first >= 0 else None, POOL)
    return tree


@dataclass(frozen=True)
class PoolLimits:
    """How far the pool drafter looks and how much it drafts: a draft of at most `max_nodes`
    nodes, `max_depth` deep, from at most `max_matches` occurrences of the longest suffix of
    `min_ngram` to `max_ngram` tokens."""

    max_nodes: int = 64
    max_ngram: int = 16
    min_ngram: int = 2
    max_depth: int = 32
    max_matches: int = 256

    def __post_init__(self) -> None:
        if not 1 <= self.min_ngram <= self.max_ngram or self.max_matches < 1:
            raise ValueError("need 1 <= min_ngram <= max_ngram and max_matches >= 1")


class PoolDrafter(Drafter):
    """Drafts from a pool over `documents` plus the memory outside the input.

    `documents[0]` is the input when `input_offset` is given: the memory position where its
    first token sits in the prompt. Its drafts then carry memory positions as sources, and the
    memory search skips that span so no occurrence is counted twice. The memory search (like
    PLD's, through `memory.positions`) covers the rest of the prompt and the output so far,
    which the pool, built once, cannot hold. Reference documents have no memory position.
    """

    name = "pool"

    def __init__(
        self,
        documents: Sequence[Sequence[int]],
        input_offset: int | None = None,
        limits: PoolLimits = PoolLimits(),
    ) -> None:
        if input_offset is not None and not documents:
            raise ValueError("input_offset needs the input as documents[0]")
        self.pool = DraftPool(documents, limits.max_ngram)
        self.input_offset = input_offset
        self.input_span = (0, 0)
        if input_offset is not None:
            self.input_span = (input_offset, input_offset + len(documents[0]))
        self.limits = limits

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tokens, limits = memory.tokens, self.limits
        context = tokens[-limits.max_ngram :]
        found = self.pool.search(context, limits.min_ngram, limits.max_matches, limits.max_depth)
        length, ends = self._memory_matches(memory)
        n = max(found.n, length)
        if n < limits.min_ngram:
            return DraftTree(root=tokens[-1])
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if found.n == n:
            firsts = np.full(len(found.rows), -1, np.int64)
            if self.input_offset is not None:
                inside = found.documents == 0
                firsts[inside] = found.offsets[inside] + self.input_offset
            parts.append((found.rows, firsts, np.full(len(firsts), found.count / len(firsts))))
        if length == n:
            sample = [ends[i] + 1 for i in evenly(len(ends), limits.max_matches).tolist()]
            pad = [SEPARATOR] * limits.max_depth
            rows = np.array([(tokens[j : j + limits.max_depth] + pad)[: len(pad)] for j in sample])
            parts.append((rows, np.array(sample), np.full(len(sample), len(ends) / len(sample))))
        rows, firsts, weights = (np.concatenate(column) for column in zip(*parts))
        return prefix_tree(tokens[-1], rows, firsts, weights, min(budget, limits.max_nodes))

    def _memory_matches(self, memory: Memory) -> tuple[int, list[int]]:
        """The longest suffix match ending at an earlier memory position outside the input, and
        the end positions of its occurrences."""
        tokens, last = memory.tokens, len(memory.tokens) - 1
        positions = memory.positions[tokens[last]]  # ascending
        before = bisect.bisect_left(positions, last)
        start, stop = self.input_span
        skip_from = bisect.bisect_left(positions, start, hi=before)
        skip_to = bisect.bisect_left(positions, stop, lo=skip_from, hi=before)
        best, ends = 0, []
        for j in positions[:skip_from] + positions[skip_to:before]:
            n = 1
            while n < self.limits.max_ngram and n <= j and tokens[j - n] == tokens[last - n]:
                n += 1
            if n > best:
                best, ends = n, [j]
            elif n == best:
                ends.append(j)
        return best, ends
