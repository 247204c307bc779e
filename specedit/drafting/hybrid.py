"""EvoSpec-style hybrid drafting: copy where the input drafts, a draft model where it cannot.

An edit mostly copies its input, and there AdaPLD's copies are long and cheap; where the answer
writes new text (type hints, a docstring, a new function) copies are rejected at once and a small
draft model with the target's tokenizer does better. The hybrid follows the verifier's verdicts:
while copies are accepted it only copies; after a copy is rejected it adds the draft model's
chain beside a short copy, until a copy is accepted again. A draft model that is far behind
(the first time, it has the whole prompt to read) is asked only after a second rejection in a
row: the copy gets a second chance first. Verification is unchanged, so greedy output
is exactly the target's.

The draft model's LM head may be restricted to an active vocabulary (draft_model.py) that grows
when the target commits a token outside it: the miss's seeds are the target's own top tokens at
that position, read from its LM-head HNSW index with the stored final state.
"""

from __future__ import annotations

from collections import Counter

from specedit.drafting.adapld import AdaPLD
from specedit.drafting.cooccurrence import token_statistics
from specedit.drafting.draft_model import ActiveVocabulary, DraftModel
from specedit.drafting.kinds import MAIN, MODEL
from specedit.drafting.vocabulary import vocabulary_index
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree

VOCABULARIES = ("dynamic", "core", "full")  # EvoSpec's, its static core alone, the whole head
TRUST_AFTER = 4  # main-copy tokens one pass must accept for copies to be trusted again
# Committed tokens the draft model has not read yet, above which one rejected copy is not enough
# to ask it: catching up (the whole prompt, the first time) costs seconds, and a fix's single
# rejection is usually followed by copies that hold again.
COLD_LAG = 256
SEEDS = 10  # target top tokens and embedding neighbours of a missed token (the paper's 10 + 10)


def active_vocabulary(draft, document: list[int], kind: str, core_size: int, budget: int):
    """The draft model's active vocabulary of `kind` for one document (None: the full head)."""
    if kind not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {kind!r}: choose one of {', '.join(VOCABULARIES)}")
    if kind == "full":
        return None
    head = draft.model.get_output_embeddings().weight.detach()
    statistics = token_statistics(draft.tokenizer, head)
    core = statistics.most_frequent(core_size)
    return ActiveVocabulary(head, core, document, statistics, budget if kind == "dynamic" else 0)


class Hybrid(Drafter):
    """AdaPLD's copies plus a draft model's chains; `copy=False` is plain draft-model drafting
    (no copier, and no hidden states asked of the target unless the vocabulary or the
    alignment learns from them)."""

    name = "evospec"

    def __init__(
        self,
        model,
        draft,
        document: list[int],
        *,
        copy: bool = True,
        vocabulary: str = "dynamic",
        horizon: int = 6,
        unsure_copy: int = 16,
        core_size: int = 32768,
        budget: int = 256,
        lora: bool = False,
    ) -> None:
        self.copier = AdaPLD(model) if copy else None
        self.final = model.config.num_hidden_layers  # the normed state the target's head reads
        learns = vocabulary == "dynamic" or lora  # from the target's final states
        # The target's LM-head index (the copier's own): the target's top tokens at a position.
        self.vocabulary = vocabulary_index(model) if learns or copy else None
        self.hidden_layers = (
            self.copier.hidden_layers if copy else (self.final,) if learns else ()
        )  # the copier's last entry is the final layer
        self.active = active_vocabulary(draft, document, vocabulary, core_size, budget)
        self.alignment = None
        if lora:
            from specedit.drafting.alignment import OnlineAlignment  # needs the lora extra

            self.alignment = OnlineAlignment(draft.model, self.vocabulary, self.final)
        drafting_model = self.alignment.model if self.alignment else draft.model
        self.draft = DraftModel(drafting_model, self.active)
        self.copy, self.horizon, self.unsure_copy = copy, horizon, unsure_copy
        self.rejections = 0 if copy else 2  # copy passes rejected in a row (edits start copying)
        self.checked = 0  # committed tokens already learnt from
        self.counts: Counter[str] = Counter()

    def _expand_on_misses(self, memory: Memory, fresh: range) -> None:
        """Grow the active vocabulary with seeds for each committed token that was outside it."""
        if self.active is None or self.active.dynamic is None:
            return
        for position in fresh:
            token = memory.tokens[position]
            if token in self.active:
                continue
            self.counts["vocabulary_misses"] += 1
            target_top = self.vocabulary.top_tokens(memory.hidden(self.final)[position - 1], SEEDS)
            similar = self.vocabulary.similar_tokens(token, 0.0, SEEDS)
            self.active.expand([token, *target_top, *similar])

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        # The tokens committed since the last draft (none before the first: the prompt is the
        # document) are what the vocabulary and the alignment learn from.
        fresh = range(self.checked or len(memory), len(memory))
        self.checked = len(memory)
        self._expand_on_misses(memory, fresh)
        if self.alignment is not None:
            self.alignment.learn(memory, fresh)
        cold = self.rejections == 1 and self.draft.lag(memory.tokens) > COLD_LAG
        if self.rejections == 0 or cold:
            self.counts["second_chances" if cold else "copy_passes"] += 1
            return self.copier.propose(memory, budget)
        horizon = min(self.horizon, budget)
        copy_room = min(budget - horizon, self.unsure_copy) if self.copy else 0
        tree = (
            self.copier.propose(memory, copy_room)
            if copy_room > 0
            else DraftTree(root=memory.tokens[-1])
        )
        chain = self.draft.chain(memory.tokens, horizon)
        self.counts["model_passes"] += 1
        _merge_chain(tree, chain)
        return tree

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        if self.copier is not None:
            self.copier.observe(tree, accepted)
        kinds = [tree.kind(node) for node in accepted]
        if self.active is not None:
            for node in accepted:
                self.active.hit(tree.token(node))
        self.counts["model_tokens_accepted"] += kinds.count(MODEL)
        if self.copy:  # copies are trusted while the verifier keeps accepting them
            main = tree.kinds.count(MAIN)
            held = main > 0 and kinds.count(MAIN) >= min(TRUST_AFTER, main)
            self.rejections = 0 if held else self.rejections + 1

    def report(self) -> dict[str, float]:
        copier = self.copier.report() if self.copier is not None else {}
        report = {**copier, **self.counts, "draft_model_steps": self.draft.steps}
        if self.active is not None:
            report["active_vocabulary"] = len(self.active)
            report["vocabulary_inserted"] = self.active.inserted
        if self.alignment is not None:
            report.update(self.alignment.report())
        return report


def _merge_chain(tree: DraftTree, chain: list[int]) -> None:
    """Hang `chain` below the root, sharing the nodes already drafted with the same tokens."""
    children = tree.children()
    node = 0
    for depth, token in enumerate(chain):
        same = next((c for c in children[node] if tree.token(c) == token), None)
        if same is None:
            tree.add_chain(chain[depth:], node, kind=MODEL)
            return
        node = same
