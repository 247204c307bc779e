"""The drafting methods by name: what `--method` chooses and `specedit bench` compares.

Drafter modules are imported when a drafter is made, not when this module is: the CLI reads the
names for its help and choices without loading torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

    @property
    def input_end(self) -> int | None:
        """Where the input ends in the prompt (None: not known), where copies from it end."""
        return self.input_start + len(self.input_tokens) if self.input_tokens else None


def _ar(model, sources: DraftSources) -> Drafter:
    from specedit.engine.drafter import Drafter

    return Drafter()


def _pld(model, sources: DraftSources, sized: bool = True) -> Drafter:
    from specedit.drafting.copy import CopyDrafter, NgramRanker
    from specedit.drafting.length import AgreementLength

    confidence = AgreementLength() if sized else None
    return CopyDrafter("pld", NgramRanker(), confidence=confidence, input_end=sources.input_end)


def _pldplus(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copy import CopyDrafter, HiddenStateRanker, rank_layer

    ranker = HiddenStateRanker(model.config.num_hidden_layers, rank_layer(model))
    return CopyDrafter("pldplus", ranker, input_end=sources.input_end)


def _pldplus_attention(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.copy import CopyDrafter
    from specedit.drafting.heads import AttentionRanker

    ranker = AttentionRanker(model)  # needs `specedit calibrate`
    return CopyDrafter("pldplus-attn", ranker, input_end=sources.input_end)


def _adapld(model, sources: DraftSources, tokens_only: bool | None = None, **options) -> Drafter:
    from specedit.drafting.adapld import AdaPLD, reads_tokens_only

    if tokens_only is None:  # the ablations adapld-tokens and adapld-states say which
        tokens_only = reads_tokens_only(model)
    return AdaPLD(model, tokens_only=tokens_only, input_end=sources.input_end, **options)


def _pool(model, sources: DraftSources) -> Drafter:
    from specedit.drafting.pool import PoolDrafter

    return PoolDrafter([sources.input_tokens, *sources.references], sources.input_start)


def _evospec(model, sources: DraftSources, **options) -> Drafter:
    from specedit.drafting import DrafterUnavailable
    from specedit.drafting.hybrid import Hybrid

    if sources.draft is None:
        raise DrafterUnavailable(
            "this method drafts with a second model: add --draft-model "
            "(e.g. --draft-model qwen2.5-coder-0.5b for the 1.5B)"
        )
    # The draft model is asked only where it pays, beside copies; the draft-model ablation
    # (no copier) measures its chains alone, so it always asks.
    if sources.pass_cost is not None and options.get("copy", True):
        options = {**options, "pass_cost": sources.pass_cost}
        options["draft_cost"] = sources.draft.pass_cost()
    return Hybrid(
        model, sources.draft, sources.input_tokens, input_end=sources.input_end, **options
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
# pld and adapld with fixed 64-token copies (not sized by the pass cost), parts of adapld and
# evospec switched off or swapped (adapld-tokens: its token-only parts on either engine;
# adapld-states: its hidden-state parts on llama.cpp too), and plain draft-model drafting, for
# `specedit bench` only.
ABLATIONS: dict[str, Factory] = {
    "pld-fixed": partial(_pld, sized=False),
    "adapld-fixed": partial(_adapld, sized=False),
    "adapld-no-semantic": partial(_adapld, semantic=False),
    "adapld-no-branch": partial(_adapld, branch=False),
    "adapld-no-successor": partial(_adapld, successor=False),
    "adapld-adaptive-length": partial(_adapld, adaptive=True),
    "adapld-trained-length": partial(_adapld, adaptive=True, pre_verifier="trained"),
    "adapld-exact-head": partial(_adapld, hnsw=False),
    "adapld-tokens": partial(_adapld, tokens_only=True),
    "adapld-states": partial(_adapld, tokens_only=False),
    "evospec-core-only": partial(_evospec, vocabulary="core"),
    "evospec-full-head": partial(_evospec, vocabulary="full"),
    "evospec-lora": partial(_evospec, lora=True),
    "draft-model": partial(_evospec, copy=False, vocabulary="full"),
}
DEFAULT_METHOD = "adapld"
HYBRID_METHOD = "evospec"  # the default instead when a draft model is configured (README)


def _made_by(factories: tuple[Factory, ...]) -> tuple[str, ...]:
    """Every method and ablation that one of `factories` makes."""
    return tuple(
        name
        for name, factory in {**METHODS, **ABLATIONS}.items()
        if getattr(factory, "func", factory) in factories
    )


# The methods that need `--draft-model`: every one made by the hybrid's factory.
DRAFT_MODEL_METHODS = _made_by((_evospec,))
# What llama.cpp cannot run, and why. Everything else runs there: it returns each token's final
# hidden state, where the hidden-state methods compare states (copy.py's rank_layer), the
# vocabulary indexes are read from the GGUF file (vocabulary.py), and the hybrid drafts with a
# llama.cpp draft model (hybrid.py).
LLAMA_CPP_REFUSED = {
    "pldplus-attn": "ranks copies by the induction heads' attention weights, which the llama.cpp "
    "engine does not expose",
    "adapld-trained-length": "sizes copies with a pre-verifier trained on an early layer's "
    "hidden states, which the llama.cpp engine does not return (only the final one)",
    "evospec-lora": "trains the draft model's weights, which the llama.cpp engine does not give",
}
LLAMA_CPP_DRAFTERS = tuple(name for name in (*METHODS, *ABLATIONS) if name not in LLAMA_CPP_REFUSED)


def default_method(has_draft_model: bool) -> str:
    """The method an edit uses unless told, on either engine: the hybrid wherever a draft model
    is at hand (it wins where the input cannot draft and copies like adapld where it can),
    else adapld."""
    return HYBRID_METHOD if has_draft_model else DEFAULT_METHOD


def refusal(method: str, engine: str) -> str | None:
    """Why `method` cannot draft on `engine`, or None when it can."""
    if engine != "llama.cpp" or method in LLAMA_CPP_DRAFTERS:
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
    ablations are accepted too. Raises DrafterUnavailable when an artefact it needs is missing."""
    factory = METHODS.get(method) or ABLATIONS.get(method)
    if factory is None:
        known = ", ".join([*METHODS, *ABLATIONS])
        raise ValueError(f"unknown method {method!r}: choose one of {known}")
    if why := refusal(method, getattr(model, "engine", "torch")):
        from specedit.drafting import DrafterUnavailable

        raise DrafterUnavailable(why)
    return factory(model, sources or DraftSources())
