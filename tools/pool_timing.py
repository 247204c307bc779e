"""Time the draft pool at REST scale: build over 1M tokens, then one propose() per query.

The pool is random tokens (vocab ~150k) with planted repeats: chunks copied many times over
(long matches, agreeing continuations) and one short "hot" phrase before thousands of
different continuations (the worst case for the match cap and the tree). Queries come in three
kinds: contexts copied from the pool, the hot phrase after unseen tokens, and random contexts
(no match: every lookup of the binary search over n runs).

Usage::

    python tools/pool_timing.py [--tokens 1000000] [--queries 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from specedit.drafting.copying.pool import PoolDrafter
from specedit.engine.memory import Memory

VOCAB = 150_000


def build_corpus(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random tokens with repeated chunks and a hot phrase; returns (tokens, hot phrase)."""
    tokens = rng.integers(0, VOCAB, size)
    for _ in range(200):  # chunks of 50-500 tokens, each copied to 2-20 other places
        length = int(rng.integers(50, 500))
        start = int(rng.integers(0, size - length))
        for target in rng.integers(0, size - length, int(rng.integers(2, 21))):
            tokens[target : target + length] = tokens[start : start + length]
    hot = rng.integers(0, VOCAB, 6)
    for target in rng.integers(0, size - len(hot), 5_000):
        tokens[target : target + len(hot)] = hot
    return tokens, hot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    corpus, hot = build_corpus(args.tokens, rng)

    started = time.perf_counter()
    drafter = PoolDrafter([corpus.tolist()])
    build = time.perf_counter() - started
    print(f"pool of {len(drafter.pool):,} tokens built in {build:.2f} s")

    per_kind = args.queries // 4
    contexts = {
        "from pool": [
            corpus[end - 24 : end].tolist() for end in rng.integers(24, args.tokens, 2 * per_kind)
        ],
        "hot phrase": [rng.integers(0, VOCAB, 18).tolist() + hot.tolist() for _ in range(per_kind)],
        "random": [rng.integers(0, VOCAB, 24).tolist() for _ in range(per_kind)],
    }
    every = []
    for kind, queries in contexts.items():
        times, nodes = [], []
        for context in queries:
            memory = Memory(context)
            started = time.perf_counter()
            tree = drafter.propose(memory, 64)
            times.append(time.perf_counter() - started)
            nodes.append(len(tree) - 1)
        every += times
        report(kind, times, f", mean tree {np.mean(nodes):.1f} nodes")
    report("all", every)


def report(label: str, seconds: list[float], extra: str = "") -> None:
    ms = np.array(seconds) * 1e3
    print(
        f"{label:>10}: {len(ms)} queries, mean {ms.mean():.3f} ms, "
        f"p95 {np.percentile(ms, 95):.3f} ms, max {ms.max():.3f} ms{extra}"
    )


if __name__ == "__main__":
    main()
