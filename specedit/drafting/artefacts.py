"""What drafters build or learn once per model and keep under the cache: vocabulary indexes,
induction-head rankings, pre-verifier weights.

Each artefact's file name carries a key of the weights it was made from, so a different model
(or changed weights) never reads another's artefact; files are written atomically.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from specedit.files import replace_atomically
from specedit.models.bundled import cache_dir, private_dir

if TYPE_CHECKING:
    from specedit.models.gguf_weights import GgufMatrix


def weights_key(matrix: torch.Tensor | GgufMatrix) -> str:
    """A hash of the matrix's shape, dtype and every 61st row: cheap, and distinct across models.
    Only those rows are read, so a GGUF file's matrix is keyed without being read whole."""
    digest = hashlib.sha256(str((tuple(matrix.shape), matrix.dtype)).encode())
    digest.update(matrix[::61].detach().contiguous().cpu().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def artefact_path(folder: str, stem: str, matrix: torch.Tensor | GgufMatrix, suffix: str) -> Path:
    """cache/<folder>/<stem>-<weights key of matrix><suffix>."""
    return keyed_path(folder, stem, weights_key(matrix), suffix)


def keyed_path(folder: str, stem: str, key: str, suffix: str) -> Path:
    """cache/<folder>/<stem>-<key><suffix>: an artefact of the model that `key` names, for a
    model whose weights are not at hand (a GGUF file's on llama.cpp)."""
    return cache_dir() / folder / f"{stem}-{key}{suffix}"


def save_artefact(path: Path, write: Callable[[Path], None]) -> Path:
    """Write an artefact through `write(temporary path)`, atomically."""
    private_dir(path.parent)
    return replace_atomically(path, write)
