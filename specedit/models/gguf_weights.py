"""A GGUF file's vocabulary matrices for drafters on llama.cpp, which gives no weights: the token
embeddings and the LM head, read from the file with the gguf package.

The torch engine's folder is the GGUF file dequantized and rounded to bf16 (prepare's
_convert_gguf), then kept in bf16 or widened to fp32 (prepare.storage_dtype). Rows read here are
rounded the same way: they are the torch engine's values, so an artefact keyed by them (the
vocabulary indexes, drafting/artefacts.py) serves both engines, whichever made it first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

# The dtypes the torch engine holds a converted GGUF file's weights in: the same values.
HELD_IN = (torch.float32, torch.bfloat16)
CHUNK = 8192  # rows dequantized at a time


class GgufMatrix:
    """One of a GGUF file's matrices, indexed by rows as a tensor is (`matrix[token]`,
    `matrix[::61]`, `matrix[:]`) and held in `dtype`: only the rows asked for are dequantized,
    since the whole matrix is needed only where an index is built."""

    def __init__(self, tensor: Any, dtype: torch.dtype = torch.float32) -> None:
        self._tensor = tensor
        self.shape = tuple(int(n) for n in reversed(tensor.shape))  # gguf lists columns first
        self.dtype = dtype

    def __getitem__(self, rows: int | slice) -> torch.Tensor:
        if isinstance(rows, int):
            return self._read(rows)
        picked = range(self.shape[0])[rows]
        out = torch.empty((len(picked), self.shape[1]), dtype=self.dtype)
        for first in range(0, len(picked), CHUNK):  # dequantizing makes copies: a chunk's only
            part = picked[first : first + CHUNK]
            out[first : first + len(part)] = self._read(slice(part.start, part.stop, part.step))
        return out

    def _read(self, rows: int | slice) -> torch.Tensor:
        from gguf.quants import dequantize

        values = dequantize(self._tensor.data[rows], self._tensor.tensor_type)
        return torch.from_numpy(np.ascontiguousarray(values)).to(torch.bfloat16).to(self.dtype)

    def held_as(self, dtype: torch.dtype) -> GgufMatrix:
        """The same matrix held in `dtype`."""
        return GgufMatrix(self._tensor, dtype)


def gguf_vocabulary(path: Path) -> tuple[GgufMatrix, GgufMatrix]:
    """The token embeddings and the LM head of the GGUF file at `path`; a file without an
    `output.weight` reads its head from the token embeddings, as llama.cpp does."""
    from gguf import GGUFReader

    tensors = {tensor.name: tensor for tensor in GGUFReader(path).tensors}
    embeddings = GgufMatrix(tensors["token_embd.weight"])
    head = tensors.get("output.weight")
    return embeddings, GgufMatrix(head) if head is not None else embeddings
