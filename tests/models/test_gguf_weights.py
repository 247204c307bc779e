"""A GGUF file's vocabulary matrices, read for drafters on llama.cpp: the torch engine's values
(the file dequantized, then rounded to bf16 as its conversion rounds it), keyed as the torch
engine keys them, so that either engine finds the other's vocabulary indexes. (Against the
bundled model's converted folder: tests/e2e/test_llamacpp.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize, quantize

from specedit.drafting.artefacts import weights_key
from specedit.drafting.vocabulary import VocabularyIndex
from specedit.models import gguf_weights
from specedit.models.gguf_weights import gguf_vocabulary

Q8_0 = gguf.GGMLQuantizationType.Q8_0


def _write_gguf(path, matrices: dict[str, np.ndarray]) -> None:
    """A GGUF file holding `matrices`, quantized to Q8_0."""
    writer = gguf.GGUFWriter(path, "qwen2")
    for name, matrix in matrices.items():
        writer.add_tensor(name, quantize(matrix, Q8_0), raw_dtype=Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _as_converted(matrix: np.ndarray) -> torch.Tensor:
    """What the torch engine holds: the quantized matrix dequantized, rounded to bf16, widened."""
    values = dequantize(quantize(matrix, Q8_0), Q8_0)
    return torch.from_numpy(values).to(torch.bfloat16).float()


@pytest.fixture
def matrices() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "token_embd.weight": rng.standard_normal((300, 64)).astype(np.float32),
        "output.weight": rng.standard_normal((300, 64)).astype(np.float32),
    }


def test_rows_are_read_as_the_torch_engine_holds_them(tmp_path, matrices, monkeypatch):
    """Any rows, read a chunk at a time where many are asked for, and keyed as the same values
    in a tensor are, in fp32 and in bf16; a file without an LM head reads its token embeddings
    there, as llama.cpp does."""
    monkeypatch.setattr(gguf_weights, "CHUNK", 7)
    _write_gguf(tmp_path / "model.gguf", matrices)
    embeddings, head = gguf_vocabulary(tmp_path / "model.gguf")
    expected = _as_converted(matrices["token_embd.weight"])
    assert embeddings.shape == (300, 64) and embeddings.dtype == torch.float32
    assert torch.equal(embeddings[:], expected)
    for rows in (5, slice(10, 200, 3), slice(None, None, 61), slice(-4, None)):
        assert torch.equal(embeddings[rows], expected[rows])
    assert torch.equal(head[:], _as_converted(matrices["output.weight"]))
    assert weights_key(embeddings) == weights_key(expected)
    held = embeddings.held_as(torch.bfloat16)
    assert weights_key(held) == weights_key(expected.to(torch.bfloat16))
    _write_gguf(tmp_path / "tied.gguf", {"token_embd.weight": matrices["token_embd.weight"]})
    embeddings, head = gguf_vocabulary(tmp_path / "tied.gguf")
    assert head is embeddings


def test_the_vocabulary_index_reads_the_gguf_file_and_an_index_the_torch_engine_built(
    tmp_path, matrices, small_drafting_cache
):
    """On llama.cpp the index answers as the exact path over the file's matrices does; an index
    that the torch engine built from the same values, held in bf16, is read, not built again."""
    _write_gguf(tmp_path / "model.gguf", matrices)
    gguf_model = SimpleNamespace(engine="llama.cpp", path=tmp_path / "model.gguf")
    embeddings, head = (
        _as_converted(matrices[name]).to(torch.bfloat16)
        for name in ("token_embd.weight", "output.weight")
    )
    torch_model = SimpleNamespace(
        get_input_embeddings=lambda: SimpleNamespace(weight=embeddings),
        get_output_embeddings=lambda: SimpleNamespace(weight=head),
    )
    VocabularyIndex(torch_model)  # builds both indexes, keyed by the bf16 weights
    built = sorted((tmp_path / "indexes").glob("*.hnsw"))
    assert len(built) == 2
    fast, exact = VocabularyIndex(gguf_model), VocabularyIndex(gguf_model, use_hnsw=False)
    assert sorted((tmp_path / "indexes").glob("*.hnsw")) == built  # none under fp32 keys
    hidden = head[17].float() + 0.1
    assert fast.top_tokens(hidden, 5) == exact.top_tokens(hidden, 5)
    assert fast.top_tokens(hidden, 1) == [17]
    assert fast.similar_tokens(3, -1.0, 8) == exact.similar_tokens(3, -1.0, 8)


def test_an_index_built_with_another_graph_is_built_again_not_read(
    tmp_path, matrices, small_drafting_cache, monkeypatch
):
    """The graph an index was built with (its links, its build's candidates) is in its file's
    name: one built before the LM head's graph changed is not what a search reads."""
    from specedit.drafting import vocabulary

    _write_gguf(tmp_path / "model.gguf", matrices)
    gguf_model = SimpleNamespace(engine="llama.cpp", path=tmp_path / "model.gguf")
    VocabularyIndex(gguf_model)
    first = sorted(path.name for path in (tmp_path / "indexes").glob("*.hnsw"))
    assert [name.split("-")[:3] for name in first] == [
        ["embed", "m16", "efc80"],
        ["head", "m32", "efc200"],
    ]
    monkeypatch.setattr(vocabulary, "HEAD_GRAPH", vocabulary.Graph(M=8, ef_construction=40))
    VocabularyIndex(gguf_model)
    again = sorted(path.name for path in (tmp_path / "indexes").glob("*.hnsw"))
    assert set(first) < set(again) and any(name.startswith("head-m8-efc40-") for name in again)
