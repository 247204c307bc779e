"""The contract between the engine and every way of drafting."""

from __future__ import annotations

from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree


class Drafter:
    """Proposes a draft tree from memory; learns nothing unless it overrides `observe`.

    Drafters never touch the model or its cache: they read `Memory` and return a tree whose root
    is the last committed token. The base class drafts nothing, which is plain decoding. Tensors a
    drafter keeps live on the model's device; they reach NumPy only through arrays.as_numpy.
    """

    name = "ar"
    hidden_layers: tuple[int, ...] = ()  # hidden-state layers the engine must keep in memory

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        """A tree of at most `budget` drafted tokens after the last token."""
        return DraftTree(root=memory.tokens[-1])

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        """Called after each verify pass with the accepted nodes of `tree` (root excluded)."""

    def report(self) -> dict[str, float]:
        """Method-specific counters for the stats (e.g. how retrieval went)."""
        return {}
