"""Copy drafting: find where the last token occurred before, choose one occurrence (the anchor),
and draft what followed it.

Every lookup method is this one step with its own way of choosing the anchor (a `Ranker`):

- `NgramRanker` (PLD): the occurrence with the longest matching n-gram, the first one at or
  after the cursor (just past the last accepted copy);
- `HiddenStateRanker` (PLD+ h): the occurrence whose preceding hidden state is most like the
  current one (at an early layer on torch, the final one on llama.cpp: `rank_layer`); AdaPLD
  chooses its main copy the same way;
- `AttentionRanker` (PLD+ a, in heads.py): the induction heads' attention on each occurrence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from specedit.drafting.copying.length import AgreementLength
from specedit.drafting.kinds import MAIN
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.target import state_layers
from specedit.engine.tree import DraftTree

if TYPE_CHECKING:
    import torch

LAYER_FRACTION = 0.125  # the hidden-state rerank layer, as a share of the model's depth


@dataclass(frozen=True)
class PromptMarks:
    """What a copy drafter knows of the prompt beyond its tokens (DraftSources.marks): the
    positions no copy runs across (`cuts`, add_copy), where the answer's first copy starts
    (`first_copy`: the input's first line of text, for a generation that starts at the
    answer's opening fence) and which tokens break a line (`line_break`: the tokenizer's word,
    which tokens alone do not say; None where it is not known)."""

    cuts: tuple[int, ...] = ()
    first_copy: int | None = None
    line_break: Callable[[int], bool] | None = None


NO_MARKS = PromptMarks()  # a prompt known by its tokens alone


def rerank_layer(num_layers: int) -> int:
    """The layer PLD+ (h), AdaPLD and the pre-verifier compare hidden states at."""
    return max(1, round(num_layers * LAYER_FRACTION))


def rank_layer(model) -> int:
    """The layer `model`'s hidden states are compared at: rerank_layer's where its targets
    return that layer, else the last one they return (llama.cpp returns only the final normed
    state, engine/target.py's state_layers)."""
    wanted = rerank_layer(model.config.num_hidden_layers)
    given = state_layers(model)
    return wanted if wanted in given else max(given)


def occurrences(memory: Memory, token: int, before: int) -> list[int]:
    """Positions j in 1 .. before - 1 that hold `token` (j >= 1: its preceding state exists)."""
    return [j for j in memory.positions.get(token, ()) if 1 <= j < before]


def state_cosine(memory: Memory, layer: int, rows: list[int], query_row: int) -> torch.Tensor:
    """Cosine of the stored states at `rows` with the one at `query_row`, at `layer`."""
    import torch  # here: token-only drafters never load it

    hidden = memory.hidden(layer)
    return torch.nn.functional.cosine_similarity(
        hidden[rows].float(), hidden[query_row].float()[None], dim=-1
    )


class Ranker(Protocol):
    """Chooses the anchor of a copy: the earlier position whose continuation is drafted."""

    hidden_layers: tuple[int, ...]  # the states it reads from memory

    def anchor(self, memory: Memory) -> int | None: ...

    def observe(self, tree: DraftTree, accepted: list[int]) -> None: ...


class NgramRanker:
    """PLD: n-gram lookup over prompt and output, n from `max_ngram` down to 1.

    Among matches it takes the first one at or after the cursor, else the first one overall: an
    edit walks through its input in order, so the next match after the previous copy is usually
    the right place, where the leftmost match (what transformers does) often lands on an earlier
    repetition of the same words.
    """

    hidden_layers = ()

    def __init__(self, max_ngram: int = 3) -> None:
        self.max_ngram = max_ngram
        self.cursor = 0

    def anchor(self, memory: Memory) -> int | None:
        tokens, last = memory.tokens, len(memory.tokens) - 1
        for n in range(min(self.max_ngram, last), 0, -1):
            suffix = tokens[last - n + 1 :]
            matches = [
                j
                for j in memory.positions.get(tokens[last], ())
                if n - 1 <= j < last and tokens[j - n + 1 : j + 1] == suffix
            ]
            if matches:
                return next((j for j in matches if j >= self.cursor), matches[0])
        return None

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        if accepted:
            self.cursor = tree.source(accepted[-1]) + 1


class ContextRanker:
    """AdaPLD's rerank where the model gives no hidden states (llama.cpp): among candidates j
    holding the last token, the one whose preceding tokens match the most of those before the
    current one (up to `max_ngram`), the first such at or after the cursor (just past the last
    accepted copy), else the first, as NgramRanker chooses."""

    hidden_layers = ()

    def __init__(self, max_ngram: int = 3) -> None:
        self.max_ngram = max_ngram
        self.cursor = 0

    def choose(self, memory: Memory, candidates: list[int], query_row: int) -> int:
        """The candidate whose preceding tokens best match those up to `query_row`."""
        if len(candidates) == 1:
            return candidates[0]
        tokens = memory.tokens

        def matched(j: int) -> int:
            n = 0
            while n < self.max_ngram and j - 1 - n >= 0 and query_row - n >= 0:
                if tokens[j - 1 - n] != tokens[query_row - n]:
                    break
                n += 1
            return n

        scores = [matched(j) for j in candidates]
        best = [j for j, score in zip(candidates, scores, strict=True) if score == max(scores)]
        return next((j for j in best if j >= self.cursor), best[0])

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        if accepted and (source := tree.source(accepted[-1])) is not None:
            self.cursor = source + 1


class HiddenStateRanker:
    """PLD+ (h): candidates j hold the last token x_t; rank them by cos(H_l[j-1], H_l[t-1]).

    The last token's own hidden state does not exist yet (it has not been fed), so the paper
    compares the states of the tokens *before* each occurrence and before the current one.
    """

    def __init__(self, num_layers: int, layer: int | None = None) -> None:
        self.layer = layer if layer is not None else rerank_layer(num_layers)
        if not 0 <= self.layer <= num_layers:
            raise ValueError(f"layer {self.layer} is outside the model's 0..{num_layers}")
        self.hidden_layers = (self.layer,)

    def choose(self, memory: Memory, candidates: list[int], query_row: int) -> int:
        """The candidate whose preceding state is most like the state at `query_row`."""
        if len(candidates) == 1:
            return candidates[0]
        scores = state_cosine(memory, self.layer, [j - 1 for j in candidates], query_row)
        return candidates[int(scores.argmax())]

    def anchor(self, memory: Memory) -> int | None:
        last = len(memory) - 1
        candidates = occurrences(memory, memory.tokens[last], last)
        return self.choose(memory, candidates, last - 1) if candidates else None

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        pass


def add_copy(
    tree: DraftTree,
    memory: Memory,
    anchor: int,
    length: int,
    confidence: AgreementLength | None = None,
    cuts: tuple[int, ...] = (),
) -> list[int]:
    """Draft up to `length` tokens that followed `anchor` as the tree's main chain, each with
    its chance of acceptance where a `confidence` estimates it. A copy from the prompt ends
    with the prompt: what follows it in memory is the answer, which does not continue the
    prompt (on a short file, verifying those tokens was most of the time). Nor does it run
    across a cut (`cuts`: prompt positions, DraftSources.cuts): where the input ends, the
    prompt goes on with a closing fence, tokenized otherwise than an answer closes its own,
    and the instruction; where the instruction ends, with the template's words."""
    end = memory.prompt_length if anchor < memory.prompt_length else len(memory)
    end = min([end, *(cut for cut in cuts if anchor < cut)])
    copied = memory.tokens[anchor + 1 : min(anchor + 1 + length, end)]
    sure = confidence.chances(memory, anchor, len(copied)) if confidence else None
    tree.add_chain(copied, first_source=anchor + 1, kind=MAIN, confidences=sure)
    return copied


def main_copy_outcome(tree: DraftTree, accepted: list[int]) -> tuple[int, int]:
    """How many main-copy tokens the verified `tree` held, and how many were accepted."""
    verified = sum(1 for kind in tree.kinds if kind == MAIN)
    return verified, sum(1 for node in accepted if tree.kind(node) == MAIN)


class CopyDrafter(Drafter):
    """Copies up to `draft_length` tokens after the anchor its ranker chooses, none across the
    prompt's `cuts` (see add_copy); with a `confidence`, says how sure each copied token is,
    so the engine verifies only as many as pay for their cost."""

    def __init__(
        self,
        name: str,
        ranker: Ranker,
        draft_length: int = 64,
        confidence: AgreementLength | None = None,
        cuts: tuple[int, ...] = (),
    ) -> None:
        self.name, self.ranker, self.draft_length = name, ranker, draft_length
        self.confidence, self.cuts = confidence, cuts
        self.hidden_layers = tuple(ranker.hidden_layers)

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = DraftTree(root=memory.tokens[-1])
        anchor = self.ranker.anchor(memory)
        if anchor is not None:
            length = min(budget, self.draft_length)
            add_copy(tree, memory, anchor, length, self.confidence, self.cuts)
        return tree

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        self.ranker.observe(tree, accepted)
        if self.confidence and len(tree) > 1:
            self.confidence.observe(*main_copy_outcome(tree, accepted))
