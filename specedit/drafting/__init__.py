"""Drafters: each proposes draft trees from memory behind the one `Drafter` interface."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from specedit.drafting.adapld import AdaPLD
from specedit.drafting.base import Drafter
from specedit.drafting.pld import PromptLookup
from specedit.drafting.pldplus import PldPlus

# Each factory takes the model (drafters size themselves to it) and returns a fresh drafter.
METHODS: dict[str, Callable[..., Drafter]] = {
    "ar": lambda model: Drafter(),
    "pld": lambda model: PromptLookup(),
    "pldplus": lambda model: PldPlus(model.config.num_hidden_layers),
    "adapld": AdaPLD,
    # ablations of adapld, for the benchmark
    "adapld-no-semantic": partial(AdaPLD, semantic=False),
    "adapld-no-branch": partial(AdaPLD, branch=False),
    "adapld-no-successor": partial(AdaPLD, successor=False),
    "adapld-fixed-length": partial(AdaPLD, adaptive=False),
    "adapld-exact-head": partial(AdaPLD, hnsw=False),
}
DEFAULT_METHOD = "pldplus"


def make_drafter(method: str, model) -> Drafter:
    """A fresh drafter for `model` (drafters keep per-document state, so one per generation)."""
    try:
        factory = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}") from None
    return factory(model)
