"""Scores and states as NumPy arrays, whichever engine made them, without importing torch.

The llama.cpp engine hands the engine NumPy arrays and the torch engine tensors (on its device).
What the engine computes on scores (verify.py's choices, the second choices a redraw branches
on) and what drafters hand to hnswlib is done in NumPy, so that an edit on llama.cpp whose
drafter reads tokens only never imports torch (it costs seconds at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


def as_numpy(array: np.ndarray | torch.Tensor) -> np.ndarray:
    """`array` as float32 NumPy: a NumPy array as it is (float32 already), a tensor copied
    from wherever it lives."""
    if isinstance(array, np.ndarray):
        return array.astype(np.float32, copy=False)
    return array.detach().float().cpu().numpy()


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; -inf scores get probability 0."""
    exp = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)
