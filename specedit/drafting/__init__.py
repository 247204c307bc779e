"""Drafters: each proposes draft trees from memory behind the one `Drafter` interface."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from specedit.drafting.adapld import AdaPLD
from specedit.drafting.base import Drafter
from specedit.drafting.heads import PldPlusAttention
from specedit.drafting.pld import PromptLookup
from specedit.drafting.pldplus import PldPlus
from specedit.drafting.pool import PoolDrafter


@dataclass(frozen=True)
class DraftSources:
    """Texts a drafter may copy from besides memory: where the input lies in the prompt, and
    reference documents that feed only the draft pool, never the prompt."""

    input_start: int = 0
    input_tokens: list[int] = field(default_factory=list)
    references: list[list[int]] = field(default_factory=list)


def _pool(model, sources: DraftSources) -> PoolDrafter:
    return PoolDrafter([sources.input_tokens, *sources.references], sources.input_start)


def _adapld(model, sources: DraftSources, **options) -> AdaPLD:
    return AdaPLD(model, **options)


# Each factory takes the model (drafters size themselves to it) and the draft sources.
METHODS: dict[str, Callable[..., Drafter]] = {
    "ar": lambda model, sources: Drafter(),
    "pld": lambda model, sources: PromptLookup(),
    "pldplus": lambda model, sources: PldPlus(model.config.num_hidden_layers),
    "pldplus-attn": lambda model, sources: PldPlusAttention(model),  # needs `specedit calibrate`
    "adapld": _adapld,
    "pool": _pool,
    # ablations of adapld, for the benchmark
    "adapld-no-semantic": partial(_adapld, semantic=False),
    "adapld-no-branch": partial(_adapld, branch=False),
    "adapld-no-successor": partial(_adapld, successor=False),
    "adapld-adaptive-length": partial(_adapld, adaptive=True),
    "adapld-trained-length": partial(_adapld, adaptive=True, pre_verifier="trained"),
    "adapld-exact-head": partial(_adapld, hnsw=False),
}
DEFAULT_METHOD = "adapld"


def make_drafter(method: str, model, sources: DraftSources | None = None) -> Drafter:
    """A fresh drafter for `model` (drafters keep per-document state, so one per generation)."""
    try:
        factory = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}") from None
    return factory(model, sources or DraftSources())
