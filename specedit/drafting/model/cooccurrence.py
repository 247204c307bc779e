"""Token statistics from text every machine has: the standard library's own sources.

Two things EvoSpec's dynamic vocabulary needs, counted once per tokenizer and cached like the
vocabulary indexes: how often each token occurs (the static core is the most frequent ones) and
which tokens tend to follow each token (a sparse bigram graph whose successors are recalled with
a token that enters the vocabulary).
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from specedit.console import progress
from specedit.drafting.artefacts import keyed_path, save_artefact

CORPUS_CHARS = 3_000_000  # ~1M tokens: enough for stable frequencies, quick to count
MIN_COUNT = 5  # a bigram seen fewer times is noise (the paper's threshold)
MIN_PROBABILITY = 0.01  # of the successor given the token
MAX_SUCCESSORS = 8  # kept per token: what one expansion recalls per seed


@dataclass(frozen=True)
class TokenStatistics:
    frequency: np.ndarray  # (vocab,) occurrences in the corpus
    successor_start: np.ndarray  # (vocab + 1,) CSR offsets into `successors`
    successors: np.ndarray  # most likely followers of each token, most likely first

    def most_frequent(self, count: int) -> np.ndarray:
        """Ids of the `count` most frequent tokens that occur at all."""
        order = np.argsort(-self.frequency, kind="stable")[:count]
        return np.sort(order[self.frequency[order] > 0])

    def followers(self, token: int) -> list[int]:
        return self.successors[
            self.successor_start[token] : self.successor_start[token + 1]
        ].tolist()


def corpus(limit: int | None = None) -> str:
    """The standard library's Python sources in a fixed order, up to `limit` characters."""
    limit = limit or CORPUS_CHARS
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, size = [], 0
    for path in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py")):
        if "test" in path.parts[-2:-1] or path.name.startswith("test_"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(text)
        size += len(text)
        if size >= limit:
            break
    return "\n".join(parts)[:limit]


def count(token_ids: np.ndarray, vocab: int) -> TokenStatistics:
    """Frequencies and the pruned bigram graph of one token stream."""
    frequency = np.bincount(token_ids, minlength=vocab)[:vocab]
    pairs = token_ids[:-1].astype(np.int64) * vocab + token_ids[1:]
    keys, counts = np.unique(pairs, return_counts=True)
    first, second = keys // vocab, keys % vocab
    keep = (counts >= MIN_COUNT) & (counts / np.maximum(frequency[first], 1) >= MIN_PROBABILITY)
    first, second, counts = first[keep], second[keep], counts[keep]
    order = np.lexsort((-counts, first))  # by token, most frequent follower first
    first, second = first[order], second[order]
    starts = np.searchsorted(first, np.arange(vocab + 1))
    rank = np.arange(len(first)) - starts[first]
    first, second = first[rank < MAX_SUCCESSORS], second[rank < MAX_SUCCESSORS]
    return TokenStatistics(frequency, np.searchsorted(first, np.arange(vocab + 1)), second)


def _save(path: Path, stats: TokenStatistics) -> None:
    with open(path, "wb") as file:  # a file object: np.savez would add ".npz" to a path
        np.savez(
            file,
            frequency=stats.frequency,
            successor_start=stats.successor_start,
            successors=stats.successors,
        )


def token_statistics(tokenizer, vocab: int, key: str) -> TokenStatistics:
    """The statistics of a model's `vocab` tokens (`key` names the model: its weights' key, or
    its GGUF file's): counted over `corpus()` once, saved beside its indexes, then loaded."""
    path = keyed_path("indexes", "tokens", key, ".npz")
    if not path.exists():
        text = corpus()
        lines = text.splitlines(keepends=True)
        chunk = 2000
        ids: list[int] = []
        with progress("counting token statistics (once per model)", len(lines), "lines") as done:
            for first in range(0, len(lines), chunk):
                batch = "".join(lines[first : first + chunk])
                ids.extend(tokenizer(batch, add_special_tokens=False)["input_ids"])
                done(min(first + chunk, len(lines)))
        stats = count(np.asarray(ids, dtype=np.int64), vocab)
        save_artefact(path, lambda tmp: _save(tmp, stats))
    return _load(path)


@cache
def _load(path: Path) -> TokenStatistics:
    """Read once per process: every edit of a session drafts with the same statistics."""
    with np.load(path) as data:
        return TokenStatistics(data["frequency"], data["successor_start"], data["successors"])
