"""AdaPLD: lexical-first retrieval with a semantic fallback, hidden-state rerank, and a draft
tree of the main copy, top-K branch tokens at the anchor and one successor per branch.

Follows the AdaPLD paper (section 3, Algorithm 1) with one change for CPUs: branches are added
only when the main copy is short (unsure), because every drafted node costs verify compute here.
The main copy says how sure it is (length.py's AgreementLength), so the engine verifies only as
much of it as pays for its cost on this machine (engine/cost.py); the ablations draft a fixed 64
(`sized=False`) or let the Pacer-style pre-verifier in length.py choose (`adaptive=True`).

On llama.cpp, which returns the final hidden state only, every part can run (the rerank
compares final states, copy.py's rank_layer; the LM head and the token embeddings are read from
the GGUF file, drafting/vocabulary.py), but there the states cost more than they save, so the
registry drafts there with `TokenAdaPLD` (measured in docs/engines.md), as the hybrid's copier
does.

`TokenAdaPLD` keeps what reads only tokens: the lexical copy, with its anchor chosen by the
tokens before each occurrence (copy.py's ContextRanker) instead of their hidden states, and
branch tokens taken from what followed the other occurrences of the last token instead of the
LM head's top-K at the anchor, each with its successor there and a chance learned by rank
(`FollowerChance`), so that the engine verifies them only where they pay. The semantic fallback
needs the token embeddings and is off.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass

from specedit.drafting.copying.copy import (
    NO_MARKS,
    ContextRanker,
    HiddenStateRanker,
    PromptMarks,
    add_copy,
    main_copy_outcome,
    occurrences,
    rank_layer,
)
from specedit.drafting.copying.length import AdaptiveLength, AgreementLength, CopyLength
from specedit.drafting.kinds import BRANCH, SUCCESSOR
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree

MAX_CANDIDATES = 256  # most recent occurrences considered; bounds the rerank's cost
PRE_VERIFIERS = ("free", "trained")


@dataclass(frozen=True)
class AdaPLDOptions:
    """How AdaPLD drafts: the defaults are what edits run; the bench's ablations switch parts
    off or swap them (bench/ablations.py)."""

    branches: int = 8  # branch tokens at the anchor (top-K)
    tau: float = 0.1  # the least cosine of an embedding neighbour in the semantic fallback
    max_copy: int = 64  # the main copy's most tokens
    branch_below: int = 16  # branch only where the main copy is shorter: unsure
    semantic: bool = True  # the semantic fallback (the token embeddings' index)
    branch: bool = True
    successor: bool = True  # one successor per branch token
    sized: bool = True  # the main copy's chances, by which the engine sizes it (engine/cost.py)
    adaptive: bool = False  # a pre-verifier chooses the copy's length (unsized)
    pre_verifier: str = "free"  # with `adaptive`: one of PRE_VERIFIERS
    hnsw: bool = True  # the vocabulary's HNSW indexes, else exact products


def reads_tokens_only(model) -> bool:
    """Whether drafters on `model` keep to their token-only parts: on llama.cpp, which returns
    the final hidden state only, and where reading it and the GGUF file's vocabulary costs the
    passes more than it saves (docs/engines.md). The bench's ablations may still ask for them."""
    return getattr(model, "engine", "torch") == "llama.cpp"


def copy_length(kind: str, model, max_length: int = 64) -> CopyLength:
    """The copy-length pre-verifier: "free" (length.py) or "trained" (preverifier.py, which
    reads `model`'s weights key)."""
    if kind == "free":
        return AgreementLength(AdaptiveLength(max_length=max_length))
    if kind == "trained":
        from specedit.drafting.copying.preverifier import TrainedLength  # torch: not the default's

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


class AdaPLDBase(Drafter, ABC):
    """What both AdaPLDs share: retrieve the last token's earlier occurrences, copy after the
    anchor their ranker chooses, and branch where that copy is unsure; how they branch, and
    what the ranker reads, is each one's own."""

    name = "adapld"

    def __init__(
        self,
        ranker: HiddenStateRanker | ContextRanker,
        options: AdaPLDOptions,
        model,
        marks: PromptMarks,
    ) -> None:
        """`model`: the target, whose weights the trained pre-verifier is keyed by (None: a
        drafter that reads tokens alone). `marks`: where copies from the prompt end, where a
        generation that starts at the answer's opening fence copies from first, and which
        tokens break lines (DraftSources.marks)."""
        self.ranker, self.options = ranker, options
        self.marks = marks
        self.branches = options.branches if options.branch else 0
        self.successor = options.successor and options.branch
        self.length: CopyLength | None = None  # with `adaptive`: it sizes the copy
        if options.adaptive:
            self.length = copy_length(options.pre_verifier, model, options.max_copy)
        sized = options.sized and not options.adaptive
        self.confidence = AgreementLength(line_break=marks.line_break) if sized else None
        self.retrieval: Counter[str] = Counter()

    def _candidates(self, memory: Memory, token: int, before: int) -> tuple[list[int], str]:
        """Positions j in 1..before-1 holding `token`."""
        lexical = occurrences(memory, token, before)
        if lexical:
            return lexical[-MAX_CANDIDATES:], "lexical"
        return [], "none"

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tokens, last = memory.tokens, len(memory.tokens) - 1
        tree = DraftTree(root=tokens[last])
        first_copy = self.marks.first_copy
        if first_copy is not None and len(memory) == memory.prompt_length:
            # The answer opens where the input does, which its last token does not always find:
            # a file that starts with blank lines has them in one token with its fence's line
            # break, and the answer's line break then occurs only in the template's words.
            candidates, outcome, anchor = [], "opening", first_copy - 1
        else:
            candidates, outcome = self._candidates(memory, tokens[last], last)
            anchor = self.ranker.choose(memory, candidates, last - 1) if candidates else None
        self.retrieval[outcome] += 1
        if anchor is None:
            return tree

        main: list[int] = []
        if outcome != "semantic":  # a semantic anchor has no continuation worth copying
            available = last - anchor
            if self.length:
                length = self.length.length(memory, anchor, available)
            else:
                length = min(self.options.max_copy, available)
            length = min(length, budget)
            main = add_copy(tree, memory, anchor, length, self.confidence, self.marks.cuts)

        # Branch only where a copy found by its last token is unsure: on a CPU every drafted
        # node adds verify compute, and a long confident copy rarely leaves room for an
        # alternative. The answer's opening copy was not looked up: nothing to branch to.
        room = budget - len(main)
        if self.branches and candidates and room > 0 and len(main) < self.options.branch_below:
            self._add_branches(tree, memory, candidates, anchor, main, room)
        return tree

    @abstractmethod
    def _add_branches(
        self,
        tree: DraftTree,
        memory: Memory,
        candidates: list[int],
        anchor: int,
        main: list[int],
        room: int,
    ) -> None:
        """Up to `room` branch tokens (and successors) beside the `main` copy after `anchor`,
        the last token's `candidates` retrieved."""

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        verified, on_main = main_copy_outcome(tree, accepted)
        if verified:
            for learner in (self.length, self.confidence):
                if learner:
                    learner.observe(verified, on_main)

    def report(self) -> dict[str, int]:
        return {f"retrieval_{k}": v for k, v in sorted(self.retrieval.items())}


class AdaPLD(AdaPLDBase):
    """The default drafter on torch: anchors and branch tokens read the model's hidden states
    and its vocabulary's indexes."""

    def __init__(
        self,
        model,
        options: AdaPLDOptions = AdaPLDOptions(),
        marks: PromptMarks = NO_MARKS,
    ) -> None:
        num_layers = model.config.num_hidden_layers
        self.final = num_layers  # hidden_states[num_layers] is the normed state the head reads
        ranker = HiddenStateRanker(num_layers, rank_layer(model))
        layers = (ranker.layer, self.final) if options.branch else (ranker.layer,)
        self.hidden_layers = tuple(dict.fromkeys(layers))  # one on llama.cpp: the final
        self.vocabulary = None
        if options.semantic or options.branch:
            from specedit.drafting.vocabulary import vocabulary_index  # torch: the states' parts

            self.vocabulary = vocabulary_index(model, options.hnsw)
        super().__init__(ranker, options, model, marks)

    def _candidates(self, memory: Memory, token: int, before: int) -> tuple[list[int], str]:
        """Positions j in 1..before-1 holding `token`, else a semantically similar token."""
        found, outcome = super()._candidates(memory, token, before)
        if found or not self.options.semantic:
            return found, outcome
        similar = self.vocabulary.similar_tokens(token, self.options.tau)
        found = sorted(j for t in similar for j in memory.positions.get(t, ()) if 1 <= j < before)
        if found:
            return found[-MAX_CANDIDATES:], "semantic"
        return [], "none"

    def _add_branches(
        self,
        tree: DraftTree,
        memory: Memory,
        candidates: list[int],
        anchor: int,
        main: list[int],
        room: int,
    ) -> None:
        """The LM head's top tokens at the anchor, each with what followed its best-ranked
        occurrence as its successor."""
        tokens, last = memory.tokens, len(memory.tokens) - 1
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


class TokenAdaPLD(AdaPLDBase):
    """AdaPLD reading tokens alone (what it runs on llama.cpp, and the hybrid's copier there):
    anchors chosen by the tokens before each occurrence, branch tokens from the other
    occurrences' followers, no semantic fallback."""

    def __init__(
        self, options: AdaPLDOptions = AdaPLDOptions(), marks: PromptMarks = NO_MARKS
    ) -> None:
        if options.adaptive and options.pre_verifier == "trained":
            raise ValueError("the trained pre-verifier reads hidden states")
        super().__init__(ContextRanker(), options, None, marks)
        # the followers' chances, where the engine sizes the tree by chances
        self.followers = FollowerChance(self.branches) if self.confidence else None
        self._ranks: dict[int, int] = {}  # the last tree's followers: source -> rank

    def _add_branches(
        self,
        tree: DraftTree,
        memory: Memory,
        candidates: list[int],
        anchor: int,
        main: list[int],
        room: int,
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
        self.ranker.observe(tree, accepted)
        if self.followers:
            self.followers.observe(tree, accepted, self._ranks)
        super().observe(tree, accepted)


def adapld_for(
    model, options: AdaPLDOptions = AdaPLDOptions(), marks: PromptMarks = NO_MARKS
) -> AdaPLDBase:
    """AdaPLD as it drafts on `model`'s engine: `TokenAdaPLD` where drafters read tokens only
    (reads_tokens_only), else `AdaPLD`."""
    if reads_tokens_only(model):
        return TokenAdaPLD(options, marks)
    return AdaPLD(model, options, marks)
