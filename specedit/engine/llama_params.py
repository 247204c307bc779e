"""What a `Llama` is made with that llama-cpp-python's constructor does not take: a context of
SEQUENCES sequences in one unified KV cache (engine/llamacpp.py verifies trees in it), and the
weights repacked for the CPU's kernels or not (`GgufModel.relayout`). The defaults `Llama` starts
from are swapped for the time of its construction, one `Llama` at a time. Like
engine/llamacpp.py, this imports llama-cpp-python only when a `Llama` is made."""

from __future__ import annotations

import contextlib
import threading

# KV-cache sequences of a context: one per leaf of a draft tree, so at least the most drafted
# tokens a tree may hold (engine/options.py's MAX_DRAFT) plus the root.
SEQUENCES = 65
_OPENING = threading.Lock()  # one `Llama` made at a time while the defaults are swapped


@contextlib.contextmanager
def context_params(repack: bool):
    """While a `Llama` is made, its context gets SEQUENCES sequences in one unified KV cache
    (cells shared by sequences, as a tree's prefix and shared nodes are; split caches would
    give each sequence a fraction of the context), and its weights are repacked or not
    (`weights_layout`). A llama-cpp-python without unified caches keeps one sequence: its
    targets verify chains."""
    import llama_cpp.llama_cpp as low

    defaults = low.llama_context_default_params

    def params():
        made = defaults()
        if any(name == "kv_unified" for name, _ in made._fields_):
            made.n_seq_max = SEQUENCES
            made.kv_unified = True
        return made

    with weights_layout(repack):
        low.llama_context_default_params = params
        try:
            yield
        finally:
            low.llama_context_default_params = defaults


def can_relayout() -> bool:
    """Whether this llama-cpp-python lets a `Llama` load the weights unrepacked (its model
    parameters have `use_extra_bufts`); where not, they load as llama.cpp's default has it."""
    import llama_cpp.llama_cpp as low

    return any(name == "use_extra_bufts" for name, _ in low.llama_model_params._fields_)


@contextlib.contextmanager
def weights_layout(repack: bool):
    """While a `Llama` is made, its weights repacked for the CPU's kernels or not
    (`GgufModel.relayout`); no other `Llama` is made meanwhile. The bench's own llama.cpp
    setups are made in it too, on the layout the engine runs on: both time the same kernels."""
    import llama_cpp.llama_cpp as low

    defaults, settable = low.llama_model_default_params, can_relayout()

    def params():
        made = defaults()
        if settable:
            made.use_extra_bufts = repack
        return made

    with _OPENING:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = defaults
