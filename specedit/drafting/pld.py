"""Prompt lookup (PLD): copy what followed the last n-gram's earlier occurrence."""

from __future__ import annotations

from specedit.drafting.base import Drafter
from specedit.drafting.memory import Memory
from specedit.engine.tree import DraftTree


class PromptLookup(Drafter):
    """N-gram lookup over prompt and output, n from `max_ngram` down to 1.

    Among matches it takes the first one at or after the cursor (just past the last accepted
    copy), else the first one overall: an edit walks through its input in order, so the next
    match after the previous copy is usually the right place, where the leftmost match (what
    transformers does) often lands on an earlier repetition of the same words.
    """

    name = "pld"

    def __init__(self, max_ngram: int = 3, draft_length: int = 64) -> None:
        self.max_ngram = max_ngram
        self.draft_length = draft_length
        self.cursor = 0

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tokens, last = memory.tokens, len(memory.tokens) - 1
        tree = DraftTree(root=tokens[last])
        for n in range(min(self.max_ngram, last), 0, -1):
            suffix = tokens[last - n + 1 :]
            matches = [
                j
                for j in memory.positions[tokens[last]]
                if n - 1 <= j < last and tokens[j - n + 1 : j + 1] == suffix
            ]
            if matches:
                start = next((j for j in matches if j >= self.cursor), matches[0]) + 1
                length = min(budget, self.draft_length)
                tree.add_chain(tokens[start : start + length], first_source=start)
                break
        return tree

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        if accepted:
            self.cursor = tree.source(accepted[-1]) + 1
