"""EvoSpec-style hybrid drafting: copy where the input drafts, a draft model where it cannot.

An edit mostly copies its input, and there AdaPLD's copies are long and cheap; where the answer
writes new text (type hints, a docstring, a new function) copies are rejected at once and a small
draft model with the target's tokenizer does better. The hybrid follows the verifier's verdicts:
while copies are accepted it only copies; after a copy is rejected it adds the draft model's
chain beside a short copy, until a copy is accepted again. A draft model that is far behind
(the first time, it has the whole prompt to read) is asked only after a second rejection in a
row: the copy gets a second chance first. Verification is unchanged, so greedy output
is exactly the target's.

A chain is asked for only where it pays on this machine (`Payoff`): where the draft model's
steps cost as much as the target's passes they save (a bf16 target whose narrow passes are
cheap next to a draft step), copies alone draft faster.

The draft model's choices may be restricted to an active vocabulary (draft_model.py) that grows
when the target commits a token outside it: the missed token, its bigram successors and, on
torch, the target's own top tokens at that position, read from its LM-head HNSW index with the
stored final state, and the missed token's embedding neighbours.

On llama.cpp the hybrid reads neither its target's hidden states nor its weights, as AdaPLD
does not there (adapld.reads_tokens_only: they cost more than they save): the copier is
`TokenAdaPLD`, the draft model a GGUF file in a second llama.cpp context, and its
active vocabulary restricts the argmax over its logits; online alignment (`lora`) trains
weights: torch only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specedit.drafting.artefacts import weights_key
from specedit.drafting.copying.adapld import adapld_for, reads_tokens_only
from specedit.drafting.copying.copy import NO_MARKS, PromptMarks
from specedit.drafting.kinds import MAIN, MODEL
from specedit.drafting.model.cooccurrence import token_statistics
from specedit.drafting.model.draft_model import ActiveVocabulary, draft_model_for
from specedit.drafting.vocabulary import vocabulary_index
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.tree import DraftTree
from specedit.models.bundled import file_key

if TYPE_CHECKING:
    import torch

    from specedit.engine.cost import PassCost

VOCABULARIES = ("dynamic", "core", "full")  # EvoSpec's, its static core alone, the whole head
TRUST_AFTER = 4  # main-copy tokens one pass must accept for copies to be trusted again
# Committed tokens the draft model has not read yet, above which one rejected copy is not enough
# to ask it: catching up (the whole prompt, the first time) costs seconds, and a fix's single
# rejection is usually followed by copies that hold again.
COLD_LAG = 256
SEEDS = 10  # target top tokens and embedding neighbours of a missed token (the paper's 10 + 10)
RECENT = 0.3  # the weight of the latest pass in Payoff's averages of accepted tokens


@dataclass(frozen=True)
class HybridOptions:
    """How the hybrid drafts: the defaults are what edits run; the bench's ablations switch
    parts off or swap them (bench/ablations.py)."""

    copy: bool = True  # AdaPLD's copies beside the chains (False: plain draft-model drafting)
    vocabulary: str = "dynamic"  # the draft model's active vocabulary: one of VOCABULARIES
    horizon: int = 6  # tokens in the draft model's chain
    unsure_copy: int = 16  # the most tokens of the copy beside a chain
    core_size: int = 32768  # the vocabulary's static core: the most frequent tokens
    budget: int = 256  # the dynamic set's most tokens (ARC)
    lora: bool = False  # online alignment of the draft model (the lora extra; torch only)


def active_vocabulary(draft, document: list[int], kind: str, core_size: int, budget: int):
    """The draft model's active vocabulary of `kind` for one document (None: the full head)."""
    if kind not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {kind!r}: choose one of {', '.join(VOCABULARIES)}")
    if kind == "full":
        return None
    size, key, head = _vocabulary_of(draft.model)
    statistics = token_statistics(draft.tokenizer, size, key)
    core = statistics.most_frequent(core_size)
    dynamic = budget if kind == "dynamic" else 0
    return ActiveVocabulary(size, core, document, statistics, dynamic, head)


def _vocabulary_of(model) -> tuple[int, str, torch.Tensor | None]:
    """A draft model's vocabulary size, the key its artefacts are named by, and its LM head.
    On llama.cpp (reads_tokens_only) the config's size, the GGUF file's key and no head."""
    if reads_tokens_only(model):
        return int(model.config.vocab_size), file_key(model.path), None
    head = model.get_output_embeddings().weight.detach()
    return head.shape[0], weights_key(head), head


class Payoff:
    """Whether asking the draft model for a chain pays on this machine, by measured costs and
    recent acceptance.

    A pass while copies are unsure verifies a copy tree of w tokens (root included): alone it
    costs the target's pass T(w) and yields 1 + c tokens. Asking for a chain of h tokens adds h
    draft steps of d seconds each and widens the pass to w + h; it yields 1 + m. The chain is
    asked for when (1 + m) / (L p + h d + T(w + h)) > (1 + c) / T(w): more tokens per second,
    where L p is what the draft model must first read, L committed tokens it has not seen
    (the whole prompt, the first time) at its prefill cost p per token: the chain that makes it
    read them must pay for them alone. T is the target's pass-cost curve, d the draft model's
    one-token pass and p its prefill, all measured (engine/cost.py); c is a moving average of
    the copy's tokens accepted per unsure pass, m of the chain's tokens accepted per pass that
    asked for one (each at most what its draft holds). m starts at the horizon (every token
    accepted), so that the draft model is tried; it moves only when the draft model is asked,
    so one whose chains kept failing stays unasked for the rest of the edit.
    """

    def __init__(self, pass_cost: PassCost, draft_cost: PassCost, horizon: int) -> None:
        self.pass_cost, self.step = pass_cost, draft_cost(1)
        self.reading = draft_cost.prefill_per_token
        self.copied = 0.0  # c: unsure copies are, at first, rejected ones
        self.modelled = float(horizon)  # m: optimistic

    def pays(self, width: int, horizon: int, lag: int = 0) -> bool:
        """Whether a chain of `horizon` tokens beside a copy tree of `width` tokens pays, the
        draft model `lag` tokens behind."""
        alone = (1 + min(self.copied, width - 1)) / self.pass_cost(width)
        asked = 1 + min(self.modelled, horizon)
        cost = lag * self.reading + horizon * self.step + self.pass_cost(width + horizon)
        return asked / cost > alone

    def observe(self, copied: int, modelled: int | None) -> None:
        """An unsure pass accepted `copied` copy tokens and, where a chain was asked for,
        `modelled` of its tokens."""
        self.copied += RECENT * (copied - self.copied)
        if modelled is not None:
            self.modelled += RECENT * (modelled - self.modelled)


class Hybrid(Drafter):
    """AdaPLD's copies plus a draft model's chains; without `copy`, plain draft-model drafting
    (no copier, and no hidden states asked of the target unless the vocabulary or the
    alignment learns from them). With `costs`, the target's pass cost and the draft model's,
    chains are asked for only where they pay (`Payoff`); without, always."""

    name = "evospec"

    def __init__(
        self,
        model,
        draft,
        document: list[int],
        options: HybridOptions = HybridOptions(),
        costs: tuple[PassCost, PassCost] | None = None,
        marks: PromptMarks = NO_MARKS,
    ) -> None:
        reads_model = not reads_tokens_only(model)  # its hidden states and weights
        if options.lora and not reads_model:
            raise ValueError("online alignment trains the draft model's weights: torch only")
        self.options = options
        self.copier = adapld_for(model, marks=marks) if options.copy else None
        self.final = model.config.num_hidden_layers  # the normed state the target's head reads
        learns = reads_model and (options.vocabulary == "dynamic" or options.lora)  # final states
        # The target's LM-head index (the copier's own): the target's top tokens at a position.
        copies_states = options.copy and reads_model
        self.vocabulary = vocabulary_index(model) if learns or copies_states else None
        self.hidden_layers = (
            self.copier.hidden_layers if self.copier else (self.final,) if learns else ()
        )  # the copier's last entry is the final layer
        self.active = active_vocabulary(
            draft, document, options.vocabulary, options.core_size, options.budget
        )
        self.alignment = None
        if options.lora:
            from specedit.drafting.model.alignment import OnlineAlignment  # needs the lora extra

            self.alignment = OnlineAlignment(draft.model, self.vocabulary, self.final)
        drafting_model = self.alignment.model if self.alignment else draft.model
        self.draft = draft_model_for(drafting_model, self.active)
        self.payoff = Payoff(*costs, options.horizon) if costs else None
        # copy passes rejected in a row (edits start copying)
        self.rejections = 0 if options.copy else 2
        self.unsure = False  # whether the last draft was made with copies unsure
        self.chain: list[int] | None = None  # the draft model's chain in the last draft
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
            seeds = [token]
            if self.vocabulary is not None:  # the target's top tokens there, and neighbours
                final = memory.hidden(self.final)[position - 1]
                seeds += self.vocabulary.top_tokens(final, SEEDS)
                seeds += self.vocabulary.similar_tokens(token, 0.0, SEEDS)
            self.active.expand(seeds)

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        # The tokens committed since the last draft (none before the first: the prompt is the
        # document) are what the vocabulary and the alignment learn from.
        fresh = range(self.checked or len(memory), len(memory))
        self.checked = len(memory)
        self._expand_on_misses(memory, fresh)
        if self.alignment is not None:
            self.alignment.learn(memory, fresh)
        cold = self.rejections == 1 and self.draft.lag(memory.tokens) > COLD_LAG
        self.unsure, self.chain = not (self.rejections == 0 or cold), None
        if not self.unsure:
            self.counts["second_chances" if cold else "copy_passes"] += 1
            return self.copier.propose(memory, budget)
        horizon = min(self.options.horizon, budget)
        copy_room = min(budget - horizon, self.options.unsure_copy) if self.copier else 0
        tree = (
            self.copier.propose(memory, copy_room)
            if copy_room > 0
            else DraftTree(root=memory.tokens[-1])
        )
        lag = self.draft.lag(memory.tokens)
        if self.payoff is not None and not self.payoff.pays(len(tree), horizon, lag):
            self.counts["model_not_paying"] += 1
            return tree
        self.chain = self.draft.chain(memory.tokens, horizon)
        self.counts["model_passes"] += 1
        _merge_chain(tree, self.chain)
        return tree

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        if self.copier is not None:
            self.copier.observe(tree, accepted)
        kinds = [tree.kind(node) for node in accepted]
        if self.active is not None:
            for node in accepted:
                self.active.hit(tree.token(node))
        self.counts["model_tokens_accepted"] += kinds.count(MODEL)
        if self.payoff is not None and self.unsure:
            path = [tree.token(node) for node in accepted]
            along = None if self.chain is None else _shared_length(self.chain, path)
            self.payoff.observe(len(kinds) - kinds.count(MODEL), along)
        if self.copier:  # copies are trusted while the verifier keeps accepting them
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


def _shared_length(chain: list[int], path: list[int]) -> int:
    """How many of `chain`'s tokens the accepted `path` begins with: the chain's accepted ones
    (some may sit on copy nodes that drafted the same tokens)."""
    pairs = enumerate(zip(chain, path, strict=False))
    return next((i for i, (a, b) in pairs if a != b), min(len(chain), len(path)))


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
