"""Drafters: each proposes draft trees from memory behind the one `Drafter` interface."""

from __future__ import annotations

from collections.abc import Callable

from specedit.drafting.base import Drafter
from specedit.drafting.pld import PromptLookup
from specedit.drafting.pldplus import PldPlus

METHODS: dict[str, Callable[[int], Drafter]] = {
    "ar": lambda num_layers: Drafter(),
    "pld": lambda num_layers: PromptLookup(),
    "pldplus": PldPlus,
}
DEFAULT_METHOD = "pldplus"


def make_drafter(method: str, num_layers: int) -> Drafter:
    """A fresh drafter for a model of `num_layers` layers (drafters keep per-document state)."""
    try:
        factory = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}") from None
    return factory(num_layers)
