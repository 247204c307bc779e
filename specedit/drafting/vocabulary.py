"""Vector look-ups over a model's vocabulary, with hnswlib indexes cached on disk.

Two questions drafters ask about tokens, each with an exact answer (a full product with the
vocabulary matrix) and a fast approximate one (an HNSW graph, as EvoSpec uses):

- which tokens have an embedding close to this token's (the semantic fallback of AdaPLD);
- which tokens would the model rank highest after a stored final hidden state (the top-K branch
  tokens at an anchor): a maximum-inner-product search over the LM head.

MIPS is turned into a nearest-neighbour search by the usual augmentation: every row w gets an
extra coordinate sqrt(M^2 - |w|^2), the query gets 0, so the L2-nearest rows are the rows with the
largest inner product. Indexes are keyed by a hash of the weights, so a changed model rebuilds.

On llama.cpp, which gives no weights, both matrices are read from the GGUF file
(models/gguf_weights.py): the torch engine's values, so either engine finds the other's indexes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from specedit.console import progress
from specedit.drafting.artefacts import artefact_path, save_artefact
from specedit.engine.arrays import as_numpy
from specedit.models.gguf_weights import HELD_IN, GgufMatrix, gguf_vocabulary

Matrix = torch.Tensor | GgufMatrix  # indexed by rows

# The candidates a search keeps (hnswlib's ef). Through the augmented LM head the nearest rows
# are found less often than in an ordinary L2 space, so more are kept than hnswlib's usual 64:
# a search still costs about a millisecond (docs/engines.md, "The LM head's index").
HNSW_EF = 512


class Graph(NamedTuple):
    """How an HNSW index is built: each node's links (`M`) and the candidates kept while they
    are chosen (`ef_construction`). Part of the index file's name, so that an index built
    otherwise is built again, not read."""

    M: int
    ef_construction: int

    @property
    def suffix(self) -> str:
        return f"-m{self.M}-efc{self.ef_construction}"


EMBEDDING_GRAPH = Graph(M=16, ef_construction=80)
# Built as the embeddings' index, the LM head's (MIPS as L2, a harder space) missed llama.cpp's
# own choice at 19 of 200 positions on one machine whatever `ef` (its graph varies with the
# machine and the threads that build it); with twice the links and a wider build, 1 of 200
# (docs/engines.md, "The LM head's index").
HEAD_GRAPH = Graph(M=32, ef_construction=200)


def _index(
    vectors: Callable[[], np.ndarray],
    dim: int,
    space: str,
    label: str,
    matrix: Matrix,
    stem: str,
    graph: Graph,
):
    """Load the HNSW index of `matrix` built as `graph` says (`_index_path`), or build it from
    `vectors()` (made only then: it is a large copy), reporting progress, and save it
    atomically."""
    import hnswlib

    path = _index_path(stem, matrix, graph)
    index = hnswlib.Index(space=space, dim=dim)
    if path.exists():
        index.load_index(str(path))
    else:
        data = vectors()
        index.init_index(max_elements=len(data), ef_construction=graph.ef_construction, M=graph.M)
        chunk = 8192
        with progress(f"building the {label} index (once per model)", len(data), "rows") as done:
            for first in range(0, len(data), chunk):
                end = min(first + chunk, len(data))
                index.add_items(data[first:end], np.arange(first, end))
                done(end)
        save_artefact(path, lambda tmp: index.save_index(str(tmp)))
    index.set_ef(HNSW_EF)
    return index


def _index_path(stem: str, matrix: Matrix, graph: Graph) -> Path:
    """The index file of `matrix` built as `graph` says, keyed by its weights. A GGUF file's
    matrix holds the values that the torch engine holds in fp32 or bf16, and an index made from
    either serves it: the one found, else the one of its own dtype."""
    held = [matrix.held_as(dtype) for dtype in HELD_IN] if isinstance(matrix, GgufMatrix) else []
    named = stem + graph.suffix
    paths = [artefact_path("indexes", named, m, ".hnsw") for m in held or [matrix]]
    return next((path for path in paths if path.exists()), paths[0])


def _unit(rows: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(rows.float(), dim=-1)


def _augmented_head(head: torch.Tensor) -> np.ndarray:
    """LM-head rows with the MIPS-to-L2 coordinate appended (see the module docstring)."""
    rows = as_numpy(head)
    norms = np.linalg.norm(rows, axis=1)
    extra = np.sqrt(np.maximum(norms.max() ** 2 - norms**2, 0))[:, None]
    return np.hstack([rows, extra]).astype(np.float32)


def vocabulary_matrices(model) -> tuple[Matrix, Matrix]:
    """The model's token embeddings and LM head: a transformers model's own tensors, or on
    llama.cpp (which gives no weights) its GGUF file's, read a few rows at a time."""
    if getattr(model, "engine", "torch") == "llama.cpp":
        return gguf_vocabulary(model.path)
    embeddings, head = model.get_input_embeddings(), model.get_output_embeddings()
    return embeddings.weight.detach(), head.weight.detach()


class VocabularyIndex:
    """Embedding neighbours and LM-head top-K for one model, exact or through HNSW. Through
    HNSW the matrices are read whole only to build an index (a GGUF file's are dequantized)."""

    def __init__(self, model, use_hnsw: bool = True) -> None:
        self._embeddings, self._head = vocabulary_matrices(model)
        self._embedding_index = self._head_index = None
        if use_hnsw:
            dim = self._embeddings.shape[1]
            self._embedding_index = _index(
                lambda: as_numpy(_unit(self._embeddings[:])),
                dim,
                "cosine",
                "embedding",
                self._embeddings,
                "embed",
                EMBEDDING_GRAPH,
            )
            self._head_index = _index(
                lambda: _augmented_head(self._head[:]),
                dim + 1,
                "l2",
                "LM-head",
                self._head,
                "head",
                HEAD_GRAPH,
            )

    @cached_property
    def head(self) -> torch.Tensor:
        """The whole LM head, for the exact path (a GGUF file's, dequantized once)."""
        return self._head[:]

    @cached_property
    def _unit_embeddings(self) -> torch.Tensor:
        """Row-normalised fp32 embeddings, for the exact path only (a large copy)."""
        return _unit(self._embeddings[:])

    def similar_tokens(self, token: int, threshold: float, limit: int = 32) -> list[int]:
        """Tokens (other than `token`) whose embedding cosine with it is at least `threshold`."""
        query = _unit(self._embeddings[token])
        if self._embedding_index is not None:
            labels, distances = self._embedding_index.knn_query(as_numpy(query), k=limit + 1)
            pairs = zip(labels[0].tolist(), (1 - distances[0]).tolist(), strict=True)
        else:
            scores = self._unit_embeddings @ query
            top = torch.topk(scores, limit + 1)
            pairs = zip(top.indices.tolist(), top.values.tolist(), strict=True)
        return [t for t, cos in pairs if t != token and cos >= threshold]

    def top_tokens(self, hidden: torch.Tensor, k: int) -> list[int]:
        """The k tokens with the largest logits after a final-layer hidden state."""
        if self._head_index is not None:
            query = np.append(as_numpy(hidden), np.float32(0))[None, :]
            labels, _ = self._head_index.knn_query(query, k=k)
            return labels[0].tolist()
        return torch.topk(self.head @ hidden.to(self.head.dtype), k).indices.tolist()


# Held as long as their model is: keyed by the model itself, not its id, which a model loaded
# after it is freed may be given (and would be handed another model's vocabulary).
_INDEXES: weakref.WeakKeyDictionary[Any, dict[bool, VocabularyIndex]] = weakref.WeakKeyDictionary()


def vocabulary_index(model, use_hnsw: bool = True) -> VocabularyIndex:
    """One index per loaded model (building or loading it is the slow part)."""
    built = _INDEXES.setdefault(model, {})
    if use_hnsw not in built:
        built[use_hnsw] = VocabularyIndex(model, use_hnsw)
    return built[use_hnsw]
