"""Draft trees: what a drafter proposes and what one verify pass checks.

Node 0 is the root: the last committed token, which the model has not seen yet. Every other node
is a drafted token with a parent; a chain draft is a tree with one branch. The tree turns into
the three tensors of one forward pass: the tokens, their positions (prefix length + depth) and a
4D mask where each node sees the whole prefix and its own ancestors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass
class DraftTree:
    """A root token and drafted nodes; parents always come before their children."""

    root: int
    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # index into nodes, 0 = root
    sources: list[int | None] = field(default_factory=list)  # memory position copied from
    kinds: list[str] = field(default_factory=list)  # the drafter's label of each node's origin
    # The drafter's estimate of each node's chance of being accepted once its parent is (None:
    # no estimate); the engine sizes drafts by them (engine/cost.py).
    confidences: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        """Number of nodes including the root."""
        return 1 + len(self.tokens)

    def add(
        self,
        token: int,
        parent: int,
        source: int | None = None,
        kind: str = "draft",
        confidence: float | None = None,
    ) -> int:
        """Append a node under `parent` and return its index."""
        if not 0 <= parent < len(self):
            raise ValueError(f"parent {parent} does not exist")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise ValueError(f"confidence {confidence} is not a probability")
        self.tokens.append(token)
        self.parents.append(parent)
        self.sources.append(source)
        self.kinds.append(kind)
        self.confidences.append(confidence)
        return len(self) - 1

    def add_chain(
        self,
        tokens: list[int],
        parent: int = 0,
        first_source: int | None = None,
        kind: str = "draft",
        confidences: Sequence[float | None] | None = None,
    ) -> int:
        """Append tokens as a path below `parent`, copied from consecutive positions, with
        their `confidences` (one per token; None: no estimate)."""
        if confidences is not None and len(confidences) < len(tokens):
            raise ValueError(f"{len(tokens)} tokens but {len(confidences)} confidences")
        for offset, token in enumerate(tokens):
            source = None if first_source is None else first_source + offset
            confidence = None if confidences is None else confidences[offset]
            parent = self.add(token, parent, source, kind, confidence)
        return parent

    def token(self, node: int) -> int:
        return self.root if node == 0 else self.tokens[node - 1]

    def source(self, node: int) -> int | None:
        return None if node == 0 else self.sources[node - 1]

    def kind(self, node: int) -> str | None:
        return None if node == 0 else self.kinds[node - 1]

    def parent(self, node: int) -> int:
        return -1 if node == 0 else self.parents[node - 1]

    def children(self) -> list[list[int]]:
        """children()[n] lists the nodes whose parent is n, in insertion order."""
        kids: list[list[int]] = [[] for _ in range(len(self))]
        for node, parent in enumerate(self.parents, start=1):
            kids[parent].append(node)
        return kids

    def depths(self) -> list[int]:
        depth = [0]
        for parent in self.parents:
            depth.append(depth[parent] + 1)
        return depth

    def main_chain(self) -> DraftTree:
        """The path of first children from the root (a drafter's main copy comes first): what a
        model that verifies chains only is given."""
        children, path = self.children(), [0]
        while children[path[-1]]:
            path.append(children[path[-1]][0])
        return self.subtree(path[1:])

    def subtree(self, nodes: list[int]) -> DraftTree:
        """The tree of `nodes` (each one's parent among them or the root), in their order here."""
        kept = DraftTree(self.root)
        index = {0: 0}
        for node in sorted(nodes):
            parent = self.parent(node)
            if parent not in index:
                raise ValueError(f"node {node} is kept without its parent {parent}")
            index[node] = kept.add(
                self.token(node),
                index[parent],
                self.source(node),
                self.kind(node),
                self.confidences[node - 1],
            )
        return kept

    def path_chances(self) -> list[float] | None:
        """Each node's chance of being accepted (the product of its path's confidences, a
        missing one counted as 1; the root's is 1), or None when no node has a confidence."""
        if all(c is None for c in self.confidences):
            return None
        chances = [1.0]
        for parent, confidence in zip(self.parents, self.confidences):
            chances.append(chances[parent] * (1.0 if confidence is None else confidence))
        return chances

    def is_chain(self) -> bool:
        return all(parent == node for node, parent in enumerate(self.parents))

    def inputs(
        self, prefix_length: int, dtype: torch.dtype, device: torch.device | str = "cpu"
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """input_ids (1, n), position_ids (1, n) and an additive 4D mask (1, 1, n, prefix + n).

        The mask is additive float (0 = attend, dtype min = masked) because every attention
        implementation that takes a custom mask accepts that form. Only the torch engine asks.
        """
        import torch

        n = len(self)
        ids = torch.tensor([[self.root, *self.tokens]], dtype=torch.long, device=device)
        positions = torch.tensor(self.depths(), dtype=torch.long, device=device) + prefix_length
        if self.is_chain():
            visible = torch.ones(n, n, dtype=torch.bool).tril()
        else:
            visible = torch.eye(n, dtype=torch.bool)
            for node, parent in enumerate(self.parents, start=1):
                visible[node] |= visible[parent]  # parents precede children
        mask = torch.full((1, 1, n, prefix_length + n), torch.finfo(dtype).min, dtype=dtype)
        mask[..., :prefix_length] = 0
        mask[0, 0, :, prefix_length:].masked_fill_(visible, 0)
        return ids, positions.unsqueeze(0), mask.to(device)
