"""AdaPLD: lexical-first retrieval with a semantic fallback, hidden-state rerank, and a draft
tree of the main copy, top-K branch tokens at the anchor and one successor per branch.

Follows the AdaPLD paper (section 3, Algorithm 1) with one change for CPUs: branches are added
only when the main copy is short (unsure), because every drafted node costs verify compute here.
The main copy says how sure it is (length.py's AgreementLength), so the engine verifies only as
much of it as pays for its cost on this machine (engine/cost.py); the ablations draft a fixed 64
(`sized=False`) or let the Pacer-style pre-verifier in length.py choose (`adaptive=True`).

On llama.cpp, which returns the final hidden state only, every part can run (the rerank
compares final states, copy.py's rank_layer; the LM head and the token embeddings are read from
the GGUF file, vocabulary.py), but there the states cost more than they save, so AdaPLD runs
`tokens_only` (registry.py; measured in docs/engines.md), as the hybrid's copier does.

`tokens_only` keeps what reads only tokens: the lexical copy, with its anchor chosen by the
tokens before each occurrence (copy.py's ContextRanker) instead of their hidden states, and
branch tokens taken from what followed the other occurrences of the last token instead of the
LM head's top-K at the anchor, each with its successor there and a chance learned by rank
(`FollowerChance`), so that the engine verifies them only where they pay. The semantic fallback
needs the token embeddings and is off.
"""

from __future__ import annotations

from collections import Counter

from specedit.drafting.copy import (
    ContextRanker,
    HiddenStateRanker,
    add_copy,
    main_copy_outcome,
    occurrences,
    rank_layer,
)
from specedit.drafting.kinds import BRANCH, SUCCESSOR
from specedit.drafting.length import AdaptiveLength, AgreementLength, CopyLength
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree

MAX_CANDIDATES = 256  # most recent occurrences considered; bounds the rerank's cost
PRE_VERIFIERS = ("free", "trained")


def reads_tokens_only(model) -> bool:
    """Whether drafters on `model` keep to their token-only parts: on llama.cpp, which returns
    the final hidden state only, and where reading it and the GGUF file's vocabulary costs the
    passes more than it saves (docs/engines.md). The bench's ablations may still ask for them."""
    return getattr(model, "engine", "torch") == "llama.cpp"


def copy_length(kind: str, model, max_length: int = 64) -> CopyLength:
    """The copy-length pre-verifier: "free" (length.py) or "trained" (preverifier.py)."""
    if kind == "free":
        return AgreementLength(AdaptiveLength(max_length=max_length))
    if kind == "trained":
        from specedit.drafting.preverifier import TrainedLength  # torch: not the default's

        return TrainedLength.for_model(model, max_length=max_length)
    raise ValueError(f"unknown pre-verifier {kind!r}: choose one of {', '.join(PRE_VERIFIERS)}")


class FollowerChance:
    """The chance that a follower branch of each rank is accepted, and that its successor is
    once the branch is, learned on this document from a prior: with them the engine verifies
    followers only where they pay for the width they add (engine/cost.py), as it does the
    main copy's tokens."""

    WEIGHT = 4.0

    def __init__(self, ranks: int, first: float = 0.2, successor: float = 0.5) -> None:
        self.accepted = [self.WEIGHT * first / (rank + 1) for rank in range(ranks)]
        self.tested = [self.WEIGHT] * ranks
        self.successor = [self.WEIGHT * successor, self.WEIGHT]  # accepted, tested

    def branch(self, rank: int) -> float:
        return self.accepted[rank] / self.tested[rank]

    def follow(self) -> float:
        return self.successor[0] / self.successor[1]

    def observe(self, tree: DraftTree, accepted: list[int], ranks: dict[int, int]) -> None:
        """Learn from the verified `tree`: `ranks` maps each branch's source to its rank."""
        taken = set(accepted)
        for node in range(1, len(tree)):
            if tree.kind(node) == BRANCH and tree.source(node) in ranks:
                rank = ranks[tree.source(node)]
                self.tested[rank] += 1
                self.accepted[rank] += node in taken
            elif tree.kind(node) == SUCCESSOR and tree.parent(node) in taken:
                self.successor[1] += 1
                self.successor[0] += node in taken


class AdaPLD(Drafter):
    """The default drafter; each part can be switched off for ablations."""

    name = "adapld"

    def __init__(
        self,
        model,
        *,
        branches: int = 8,
        tau: float = 0.1,
        max_copy: int = 64,
        semantic: bool = True,
        branch: bool = True,
        successor: bool = True,
        sized: bool = True,
        adaptive: bool = False,
        pre_verifier: str = "free",
        hnsw: bool = True,
        branch_below: int = 16,
        tokens_only: bool = False,
        input_end: int | None = None,
    ) -> None:
        num_layers = model.config.num_hidden_layers
        self.input_end = input_end  # where a copy from the input ends (copy.add_copy)
        self.tokens_only = tokens_only
        self.final = num_layers  # hidden_states[num_layers] is the normed state the head reads
        if tokens_only:
            if adaptive and pre_verifier == "trained":
                raise ValueError("the trained pre-verifier reads hidden states")
            self.ranker: HiddenStateRanker | ContextRanker = ContextRanker()
            self.hidden_layers = ()
            semantic = False
        else:
            self.ranker = HiddenStateRanker(num_layers, rank_layer(model))
            layers = (self.ranker.layer, self.final) if branch else (self.ranker.layer,)
            self.hidden_layers = tuple(dict.fromkeys(layers))  # one on llama.cpp: the final
        self.branches = branches if branch else 0
        self.tau, self.max_copy, self.branch_below = tau, max_copy, branch_below
        self.semantic, self.successor = semantic, successor and branch
        self.vocabulary = None
        if semantic or (branch and not tokens_only):
            from specedit.drafting.vocabulary import vocabulary_index  # torch: the states' parts

            self.vocabulary = vocabulary_index(model, hnsw)
        self.length = copy_length(pre_verifier, model, max_copy) if adaptive else None
        self.confidence = AgreementLength() if sized and not adaptive else None
        # the token-only followers' chances, where the engine sizes the tree by chances
        self.followers = FollowerChance(self.branches) if self.confidence and tokens_only else None
        self._ranks: dict[int, int] = {}  # the last tree's followers: source -> rank
        self.retrieval: Counter[str] = Counter()

    def _candidates(self, memory: Memory, token: int, before: int) -> tuple[list[int], str]:
        """Positions j in 1..before-1 holding `token`, else a semantically similar token."""
        lexical = occurrences(memory, token, before)
        if lexical:
            return lexical[-MAX_CANDIDATES:], "lexical"
        if self.semantic:
            similar = self.vocabulary.similar_tokens(token, self.tau)
            found = sorted(
                j for t in similar for j in memory.positions.get(t, ()) if 1 <= j < before
            )
            if found:
                return found[-MAX_CANDIDATES:], "semantic"
        return [], "none"

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tokens, last = memory.tokens, len(memory.tokens) - 1
        tree = DraftTree(root=tokens[last])
        candidates, outcome = self._candidates(memory, tokens[last], last)
        self.retrieval[outcome] += 1
        if not candidates:
            return tree
        anchor = self.ranker.choose(memory, candidates, last - 1)

        main: list[int] = []
        if outcome == "lexical":  # a semantic anchor has no continuation worth copying
            available = last - anchor
            if self.length:
                length = self.length.length(memory, anchor, available)
            else:
                length = min(self.max_copy, available)
            length = min(length, budget)
            main = add_copy(tree, memory, anchor, length, self.confidence, self.input_end)

        # Branch only where the copy is unsure: on a CPU every drafted node adds verify compute,
        # and a long confident copy rarely leaves room for an alternative.
        room = budget - len(main)
        if not (self.branches and room > 0 and len(main) < self.branch_below):
            return tree
        if self.tokens_only:
            self._add_followers(tree, memory, candidates, main, room)
        else:
            top = self.vocabulary.top_tokens(memory.hidden(self.final)[anchor], self.branches + 1)
            branch_tokens = [t for t in top if not main or t != main[0]][: self.branches]
            for token in branch_tokens[:room]:
                room -= 1
                node = tree.add(token, 0, kind=BRANCH)
                if self.successor and room > 0:
                    follow, _ = self._candidates(memory, token, last)
                    if follow:
                        position = self.ranker.choose(memory, follow, anchor) + 1
                        tree.add(tokens[position], node, source=position, kind=SUCCESSOR)
                        room -= 1
        return tree

    def _add_followers(
        self, tree: DraftTree, memory: Memory, candidates: list[int], main: list[int], room: int
    ) -> None:
        """Branch tokens without a model: the tokens that followed the other occurrences of the
        last token (the most frequent first, ties by the latest), each with what followed it
        there as its successor."""
        tokens, end = memory.tokens, len(memory.tokens)
        seen: Counter[int] = Counter()
        where: dict[int, int] = {}
        for j in candidates:
            if j + 1 < end and (not main or tokens[j + 1] != main[0]):
                seen[tokens[j + 1]] += 1
                where[tokens[j + 1]] = j + 1  # the latest occurrence
        ranked = sorted(seen, key=lambda t: (-seen[t], -where[t]))[: self.branches]
        chances = self.followers
        self._ranks = {}
        for rank, token in enumerate(ranked[:room]):
            room -= 1
            position = where[token]
            self._ranks[position] = rank
            sure = chances.branch(rank) if chances else None
            node = tree.add(token, 0, source=position, kind=BRANCH, confidence=sure)
            if self.successor and room > 0 and position + 1 < end:
                sure = chances.follow() if chances else None
                tree.add(
                    tokens[position + 1], node, source=position + 1, kind=SUCCESSOR, confidence=sure
                )
                room -= 1

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        if self.tokens_only:
            self.ranker.observe(tree, accepted)
            if self.followers:
                self.followers.observe(tree, accepted, self._ranks)
        verified, on_main = main_copy_outcome(tree, accepted)
        if verified:
            for learner in (self.length, self.confidence):
                if learner:
                    learner.observe(verified, on_main)

    def report(self) -> dict[str, int]:
        return {f"retrieval_{k}": v for k, v in sorted(self.retrieval.items())}
