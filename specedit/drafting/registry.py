"""The drafting methods by name: what `--method` chooses.

Drafter modules are imported when a drafter is made, not when this module is: the CLI reads the
names for its help and choices without loading torch. The bench's ablations (variants of these
methods) are made by name too, once bench/ablations.py has added them (`add_variants`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specedit.drafting.copying.copy import PromptMarks
    from specedit.engine.cost import PassCost
    from specedit.engine.drafter import Drafter
    from specedit.models.load import LoadedModel


@dataclass(frozen=True)
class DraftSources:
    """What a drafter may draw on besides memory: where the input lies in the prompt, reference
    documents that feed only the draft pool (never the prompt), a small draft model with the
    target's tokenizer (`--draft-model`), and what a verify pass of the target costs on this
    machine (`LoadedModel.pass_cost`), against which the hybrid weighs its draft model's steps
    (None: it asks the draft model wherever copies fail)."""

    input_start: int = 0
    input_tokens: list[int] = field(default_factory=list)
    references: list[list[int]] = field(default_factory=list)
    draft: LoadedModel | None = None
    pass_cost: PassCost | None = None
    instruction: tuple[int, int] | None = None  # where the instruction lies in the prompt
    # Where the answer's first copy starts, when the generation starts at the answer's opening
    # fence: the prompt position of the input's first line of text (EditPrompt.content_start).
    first_copy: int | None = None
    # Whether a token holds a line break: the tokenizer's word (None: not known), which sizes
    # copies into a line the answer began otherwise (copying/length.py's AgreementLength).
    line_break: Callable[[int], bool] | None = None

    @property
    def cuts(self) -> tuple[int, ...]:
        """Prompt positions no copy runs across (copy.add_copy): where the input ends, and
        where the instruction starts and ends (what follows either is the template's words);
        those known."""
        ends = (self.input_start + len(self.input_tokens),) if self.input_tokens else ()
        return tuple(sorted({*ends, *(self.instruction or ())}))

    def marks(self) -> PromptMarks:
        """What the copy drafters know of the prompt beyond its tokens (copy.PromptMarks)."""
        from specedit.drafting.copying.copy import PromptMarks

        return PromptMarks(self.cuts, self.first_copy, self.line_break)

    def draft_model(self) -> LoadedModel:
        """The draft model, for the methods that draft with one; DrafterUnavailable without."""
        from specedit.drafting import DrafterUnavailable

        if self.draft is None:
            raise DrafterUnavailable(
                "this method drafts with a second model: add --draft-model "
                "(e.g. --draft-model qwen2.5-coder-0.5b for the 1.5B)"
            )
        return self.draft

    def costs(self) -> tuple[PassCost, PassCost] | None:
        """The target's pass cost and the draft model's (measured the first time), which the
        hybrid weighs its chains against; None where the target's is not known."""
        if self.pass_cost is None:
            return None
        return self.pass_cost, self.draft_model().pass_cost()


def _ar(model, sources: DraftSources) -> Drafter:
    from specedit.engine.drafter import Drafter

    return Drafter()


def _pld(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copying.copy import CopyDrafter, NgramRanker
    from specedit.drafting.copying.length import AgreementLength

    confidence = AgreementLength(line_break=sources.line_break)
    return CopyDrafter("pld", NgramRanker(), confidence=confidence, cuts=sources.cuts)


def _pldplus(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copying.copy import CopyDrafter, HiddenStateRanker, rank_layer

    ranker = HiddenStateRanker(model.config.num_hidden_layers, rank_layer(model))
    return CopyDrafter("pldplus", ranker, cuts=sources.cuts)


def _pldplus_attention(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copying.copy import CopyDrafter
    from specedit.drafting.copying.heads import AttentionRanker

    ranker = AttentionRanker(model)  # needs `specedit calibrate`
    return CopyDrafter("pldplus-attn", ranker, cuts=sources.cuts)


def _adapld(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copying.adapld import adapld_for

    return adapld_for(model, marks=sources.marks())


def _pool(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copying.pool import PoolDrafter

    return PoolDrafter([sources.input_tokens, *sources.references], sources.input_start)


def _evospec(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.model.hybrid import Hybrid

    draft = sources.draft_model()
    costs = sources.costs()  # the draft model is asked only where it pays, beside copies
    return Hybrid(
        model,
        draft,
        sources.input_tokens,
        costs=costs,
        marks=sources.marks(),
    )


# Each factory takes the model (drafters size themselves to it) and the draft sources.
Factory = Callable[..., "Drafter"]
METHODS: dict[str, Factory] = {
    "ar": _ar,
    "pld": _pld,
    "pldplus": _pldplus,
    "pldplus-attn": _pldplus_attention,
    "adapld": _adapld,
    "pool": _pool,
    "evospec": _evospec,
}
# Variants of the methods that a higher layer names, never `--method` choices: the bench's
# ablations, added by bench/ablations.py so that the edits the bench runs through the editor
# draft with them.
VARIANTS: dict[str, Factory] = {}
DEFAULT_METHOD = "adapld"
# The default instead when a draft model is configured (README, "Options").
HYBRID_METHOD = "evospec"
DRAFT_MODEL_METHODS = (HYBRID_METHOD,)  # the methods that need `--draft-model`
# What llama.cpp cannot run, and why. Everything else runs there: it returns each token's final
# hidden state, where the hidden-state methods compare states (copying/copy.py's rank_layer),
# the vocabulary indexes are read from the GGUF file (vocabulary.py), and the hybrid drafts with
# a llama.cpp draft model (model/hybrid.py). Variants add theirs (`add_variants`).
LLAMA_CPP_REFUSED = {
    "pldplus-attn": "ranks copies by the induction heads' attention weights, which the llama.cpp "
    "engine does not expose",
}


def add_variants(factories: Mapping[str, Factory], llama_cpp_refused: Mapping[str, str]) -> None:
    """Let `make_drafter` make `factories` by name too (the bench's ablations), and `refusal`
    refuse the ones llama.cpp cannot run, with why."""
    if taken := sorted(set(factories) & set(METHODS)):
        raise ValueError(f"{', '.join(taken)} already name methods")
    VARIANTS.update(factories)
    LLAMA_CPP_REFUSED.update(llama_cpp_refused)


def default_method(has_draft_model: bool) -> str:
    """The method an edit uses unless told, on either engine: the hybrid wherever a draft model
    is at hand (it wins where the input cannot draft and copies like adapld where it can),
    else adapld."""
    return HYBRID_METHOD if has_draft_model else DEFAULT_METHOD


def refusal(method: str, engine: str) -> str | None:
    """Why `method` cannot draft on `engine`, or None when it can."""
    known = method in METHODS or method in VARIANTS
    if engine != "llama.cpp" or (known and method not in LLAMA_CPP_REFUSED):
        return None
    why = LLAMA_CPP_REFUSED.get(method, "is no drafting method of the llama.cpp engine")
    return f"--method {method} {why}: run it on --engine torch"


def method_for(lm: LoadedModel) -> str:
    """The method an edit with `lm` uses unless told (whether it has a draft model decides)."""
    return default_method(lm.draft is not None)


def build_artefacts(lm: LoadedModel, methods: tuple[str, ...] | None = None) -> None:
    """Build (or read) what edits with `lm` need once per model and machine, so that no edit
    nor timing pays for it: the drafters' artefacts of `methods` (the default method unless
    told: AdaPLD's vocabulary indexes; a method that cannot run here is skipped) and
    the pass-cost curves (the draft model's too, which the hybrid weighs). The exported
    tokenizer is written by `load` itself."""
    from specedit.drafting import DrafterUnavailable

    sources = DraftSources(draft=lm.draft, pass_cost=lm.pass_cost())  # the draft's cost too
    for method in methods or (method_for(lm),):
        if method in DRAFT_MODEL_METHODS and lm.draft is None:
            continue
        try:
            make_drafter(method, lm.model, sources)
        except DrafterUnavailable:
            continue


def make_drafter(method: str, model, sources: DraftSources | None = None) -> Drafter:
    """A fresh drafter for `model` (drafters keep per-document state, so one per generation);
    variants are accepted too. Raises DrafterUnavailable when an artefact it needs is missing."""
    factory = METHODS.get(method) or VARIANTS.get(method)
    if factory is None:
        known = ", ".join([*METHODS, *VARIANTS])
        raise ValueError(f"unknown method {method!r}: choose one of {known}")
    from specedit.drafting import DrafterUnavailable

    if why := refusal(method, getattr(model, "engine", "torch")):
        raise DrafterUnavailable(why)
    try:
        return factory(model, sources or DraftSources())
    except ModuleNotFoundError as exc:  # on llama.cpp, a drafter that reads states or indexes
        from specedit.models.load import TORCH_EXTRA, TORCH_INSTALL

        if exc.name not in TORCH_EXTRA:
            raise
        raise DrafterUnavailable(f"--method {method} needs {exc.name}: {TORCH_INSTALL}") from None
