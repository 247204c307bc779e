"""The vocabulary index a model's drafters share: one per loaded model, gone with it."""

from __future__ import annotations

import gc
import weakref

from helpers import tiny_model

from specedit.drafting import vocabulary


def test_a_model_s_vocabulary_index_is_its_own_and_goes_with_it():
    """A process that loads models one after another (a test run, a bench of several models)
    holds the index of the models it holds: a freed model's goes, and a model loaded later,
    perhaps at the same address, builds its own."""
    first = tiny_model("qwen2", seed=3)
    index = vocabulary.vocabulary_index(first, use_hnsw=False)
    assert vocabulary.vocabulary_index(first, use_hnsw=False) is index  # built once
    gone = weakref.ref(index)
    del first, index
    gc.collect()
    assert gone() is None
    second = tiny_model("qwen2", seed=4)
    head = second.get_output_embeddings().weight
    assert vocabulary.vocabulary_index(second, use_hnsw=False).head.equal(head)
