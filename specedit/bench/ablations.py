"""The lab's variants of the drafting methods, which `specedit bench --methods` compares beside
them: a part switched off or swapped, each made from the drafters' own constructors and
options (the defaults being what edits run).

They are no `--method` choice of the editing commands. The bench runs its edits through the
editor, which makes drafters by name, so importing this module adds them to the registry
(registry.add_variants).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from specedit.drafting.registry import DRAFT_MODEL_METHODS, DraftSources, Factory, add_variants

if TYPE_CHECKING:
    from specedit.engine.drafter import Drafter


@dataclass(frozen=True)
class Ablation:
    """A variant of the product `method`: it needs what that method needs (a draft model), and
    llama.cpp runs it unless `llama_cpp_refused` says why not."""

    method: str
    make: Factory
    llama_cpp_refused: str | None = None


def _pld_fixed(model, sources: DraftSources) -> Drafter:
    """pld's copies always at their full length, not sized by the pass cost."""
    from specedit.drafting.copying.copy import CopyDrafter, NgramRanker

    return CopyDrafter("pld", NgramRanker(), cuts=sources.cuts)


def _adapld(model, sources: DraftSources, tokens_only: bool | None = None, **changes) -> Drafter:
    """AdaPLD with `changes` to its options, on the engine's side (adapld_for) unless
    `tokens_only` says which: token-only parts on either engine, or the hidden-state parts on
    llama.cpp too."""
    from specedit.drafting.copying.adapld import AdaPLD, AdaPLDOptions, TokenAdaPLD, adapld_for

    options = replace(AdaPLDOptions(), **changes)
    if tokens_only is None:
        return adapld_for(model, options, sources.marks())
    if tokens_only:
        return TokenAdaPLD(options, sources.marks())
    return AdaPLD(model, options, sources.marks())


def _hybrid(model, sources: DraftSources, **changes) -> Drafter:
    """The hybrid with `changes` to its options; without copies (plain draft-model drafting)
    its chains are measured alone, so it always asks the draft model."""
    from specedit.drafting.model.hybrid import Hybrid, HybridOptions

    options = replace(HybridOptions(), **changes)
    draft = sources.draft_model()
    costs = sources.costs() if options.copy else None
    return Hybrid(model, draft, sources.input_tokens, options, costs, sources.marks())


ABLATIONS: dict[str, Ablation] = {
    "pld-fixed": Ablation("pld", _pld_fixed),
    "adapld-fixed": Ablation("adapld", partial(_adapld, sized=False)),
    "adapld-no-semantic": Ablation("adapld", partial(_adapld, semantic=False)),
    "adapld-no-branch": Ablation("adapld", partial(_adapld, branch=False)),
    "adapld-no-successor": Ablation("adapld", partial(_adapld, successor=False)),
    "adapld-adaptive-length": Ablation("adapld", partial(_adapld, adaptive=True)),
    "adapld-trained-length": Ablation(
        "adapld",
        partial(_adapld, adaptive=True, pre_verifier="trained"),
        "sizes copies with a pre-verifier trained on an early layer's hidden states, which the "
        "llama.cpp engine does not return (only the final one)",
    ),
    "adapld-exact-head": Ablation("adapld", partial(_adapld, hnsw=False)),
    "adapld-tokens": Ablation("adapld", partial(_adapld, tokens_only=True)),
    "adapld-states": Ablation("adapld", partial(_adapld, tokens_only=False)),
    "evospec-core-only": Ablation("evospec", partial(_hybrid, vocabulary="core")),
    "evospec-full-head": Ablation("evospec", partial(_hybrid, vocabulary="full")),
    "evospec-lora": Ablation(
        "evospec",
        partial(_hybrid, lora=True),
        "trains the draft model's weights, which the llama.cpp engine does not give",
    ),
    "draft-model": Ablation("evospec", partial(_hybrid, copy=False, vocabulary="full")),
}


def needs_draft_model(method: str) -> bool:
    """Whether `method`, a product method or an ablation, drafts with `--draft-model`."""
    ablation = ABLATIONS.get(method)
    return (ablation.method if ablation else method) in DRAFT_MODEL_METHODS


add_variants(
    {name: ablation.make for name, ablation in ABLATIONS.items()},
    {name: a.llama_cpp_refused for name, a in ABLATIONS.items() if a.llama_cpp_refused},
)
